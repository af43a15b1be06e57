import type { Report } from "../report/schema.js";
import { ReportTally } from "../report/tally.js";

// The exit code is a bit mask, computed here and nowhere else.
export const ExitBit = {
  clean: 0,
  drift: 1,
  usage: 2,
  unaudited: 4,
  /** More nodes not audited than allowed (`--max-unaudited`, `audit.max_unaudited[_for]`). */
  overUnauditedBudget: 8,
} as const;

export interface ExitFacts {
  driftFound?: boolean;
  usageOrManifestError?: boolean;
  unauditedNodes?: boolean;
  /** Some declared items could not be read (unknown): counts as unaudited only with `--strict`. */
  unknownItems?: boolean;
  strict?: boolean;
  overUnauditedBudget?: boolean;
}

export function exitCode(facts: ExitFacts): number {
  if (facts.usageOrManifestError) return ExitBit.usage;
  const unaudited = facts.unauditedNodes || (facts.strict && facts.unknownItems);
  return (
    (facts.driftFound ? ExitBit.drift : 0) |
    (unaudited ? ExitBit.unaudited : 0) |
    (facts.overUnauditedBudget ? ExitBit.overUnauditedBudget : 0)
  );
}

/** An audit's exit code: its drift and unaudited nodes, its unknown items with `--strict`. */
export function auditExitCode(report: Report, strict = false): number {
  return auditOutcome(ReportTally.of(report.nodes), strict, report.unauditedBudget);
}

export function auditOutcome(
  tally: ReportTally,
  strict: boolean,
  budget?: Report["unauditedBudget"],
): number {
  const { driftFound, unauditedNodes, unknownItems } = tally;
  const overUnauditedBudget = budget?.over !== undefined;
  return exitCode({ driftFound, unauditedNodes, unknownItems, strict, overUnauditedBudget });
}
