// Each registered domain's test sample (test/support/samples/<name>.ts, typed by samples/domain-sample.ts),
// loaded by the tests and benchmarks that run every domain at once. A domain without one fails
// test/unit/domains/registry.test.ts and every table below.
import { DOMAINS, type AnyDomain } from "../../src/domains/registry.js";
import type { DomainSample } from "./samples/domain-sample.js";
import { replaceAt, type PlainMap } from "../../src/spec-path.js";

export interface Sampled {
  domain: AnyDomain;
  sample: DomainSample<AnyDomain>;
}

/** The sample of one domain; throws naming the file when it is missing or exports no `sample`. */
export async function sampleOf(domain: AnyDomain): Promise<DomainSample<AnyDomain>> {
  const file = new URL(`samples/${domain.name}.ts`, import.meta.url);
  const module = (await import(file.href).catch((error: unknown) => {
    throw new Error(`test/support/samples/${domain.name}.ts: ${(error as Error).message}`, {
      cause: error,
    });
  })) as { sample?: DomainSample<AnyDomain> };
  if (!module.sample) throw new Error(`test/support/samples/${domain.name}.ts exports no sample`);
  return module.sample;
}

/** Every registered domain with its sample, in registry order. */
export const allSamples = (): Promise<Sampled[]> =>
  Promise.all(DOMAINS.map(async (domain) => ({ domain, sample: await sampleOf(domain) })));

/**
 * A node spec holding each given domain's declaration at the domain's `specPath`; a domain whose
 * declaration is undefined is left out.
 */
export function specOf(
  declarations: readonly (readonly [AnyDomain, unknown])[],
): Record<string, unknown> {
  return declarations.reduce<PlainMap>(
    (spec, [domain, declared]) => replaceAt(spec, domain.specPath, declared),
    {},
  );
}
