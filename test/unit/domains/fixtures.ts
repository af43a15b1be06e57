import { readFileSync } from "node:fs";
import type { AnyDomain } from "../../../src/domains/registry.js";
import { parseContext, parseProbeOutput, type SectionOutput } from "../../../src/probe/script.js";

/** Fixtures are whole probe outputs framed with this nonce (see scripts/probe-fixture.ts). */
export const FIXTURE_NONCE = "QMfixture";

export function fixture(domain: string, file: string): string {
  return readFileSync(new URL(`../../fixtures/${domain}/${file}`, import.meta.url), "utf8");
}

/** The domain's section of a captured probe output, as the audit would see it. */
export function section(domain: AnyDomain, stdout: string): SectionOutput {
  const found = parseProbeOutput(stdout, FIXTURE_NONCE).get(domain.name);
  if (!found) throw new Error(`no ${domain.name} section in fixture`);
  return found;
}

/** Parses a fixture the way the audit does; fails when the host declared the domain unknown. */
export function liveFrom(domain: AnyDomain, file: string): any {
  const out = section(domain, fixture(domain.name, file));
  if (out.unknown !== undefined) throw new Error(`fixture ${file} is unknown: ${out.unknown}`);
  return domain.parse(out.output, parseContext(FIXTURE_NONCE));
}

/**
 * The host files a captured `FILE:line` probe output was read from, by path without its leading
 * `/` (as writeTree takes them), to probe them again with the probe of today.
 */
export function capturedFiles(stdout: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const line of stdout.split("\n")) {
    const m = /^\/([^:]+):(.*)$/.exec(line);
    if (m) files[m[1]!] = `${files[m[1]!] ?? ""}${m[2]!}\n`;
  }
  return files;
}
