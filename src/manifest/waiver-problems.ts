// Waivers that can waive nothing, refused when the manifests load: a typo there would let drift
// through unwaived.
import { DOMAINS } from "../domains/registry.js";
import { globMatch, isGlob } from "../glob.js";
import type { Waiver } from "./schema.js";
import { nearest } from "./suggest.js";

/** A waiver's field that can match nothing, and what it may have meant. */
export interface WaiverProblem {
  index: number;
  field: "domain" | "key";
  message: string;
  hint?: string;
}

/** The literal start of a glob: what every value it matches begins with. */
const literalStart = (glob: string) => glob.slice(0, glob.search(/[*?[\\]/) >>> 0);

/**
 * Waivers that can waive nothing: a domain glob matching no domain (`sysctlz`), or a key no key of
 * the domains it names can have (a files key not starting with `/`), where the domain says.
 */
export function waiverProblems(waivers: readonly Waiver[]): WaiverProblem[] {
  const problems: WaiverProblem[] = [];
  const names = DOMAINS.map((d) => d.name);
  waivers.forEach((waiver, index) => {
    const domains = DOMAINS.filter((d) => globMatch(waiver.domain, d.name));
    if (!domains.length) {
      const suggestion = nearest(waiver.domain, names);
      problems.push({
        index,
        field: "domain",
        message: `waiver domain "${waiver.domain}" matches no domain (${names.join(", ")})`,
        ...(suggestion && { hint: `did you mean "${suggestion}"?` }),
      });
      return;
    }
    const start = isGlob(waiver.key) ? literalStart(waiver.key) : undefined;
    const canMatch = (prefix: string) =>
      start === undefined
        ? waiver.key.startsWith(prefix)
        : start.startsWith(prefix) || prefix.startsWith(start);
    const shaped = domains.filter((d) => d.keyPrefixes);
    if (shaped.length < domains.length || shaped.some((d) => d.keyPrefixes!.some(canMatch))) return;
    const prefixes = shaped.flatMap((d) => d.keyPrefixes!);
    problems.push({
      index,
      field: "key",
      message: `waiver key "${waiver.key}" can match no ${shaped.map((d) => d.name).join(" or ")} key: those start with ${prefixes.map((p) => `"${p}"`).join(" or ")}`,
    });
  });
  return problems;
}
