import { within, type Finding } from "../domains/domain.js";
import type { AnyDomain } from "../domains/registry.js";
import { isPlainMap, replaceAt } from "../spec-path.js";

/**
 * The domain's declaration once this finding's live state is accepted into the manifest: the
 * domain's own `accept`, else the value at the finding's path set to the live one (removed when
 * live is null). `auditedAt`: when the audit that found it ran.
 */
export function acceptFinding(
  domain: AnyDomain,
  declared: unknown,
  finding: Finding,
  auditedAt?: number,
): unknown {
  if (domain.accept) return domain.accept(declared, finding, auditedAt);
  const relative = within(domain, finding.path);
  const live = finding.live === null ? undefined : finding.live;
  if (!relative.length) return live;
  return replaceAt(isPlainMap(declared) ? declared : {}, relative, live);
}
