// Ordering and value rendering shared by the human-facing formats, so they agree.
import type { Latent } from "../../domains/cause.js";
import { SEVERITIES, type Severity } from "../../domains/domain.js";
import { declaredWords, liveWords } from "../../domains/registry.js";
import { wordList } from "../../text/word-list.js";
import type { DriftItem, NodeResult } from "../schema.js";

export function severityRank(severity: Severity): number {
  return SEVERITIES.indexOf(severity);
}

/** Critical first, then domain and key; acknowledged items after all the others. */
export function compareDrift(a: DriftItem, b: DriftItem): number {
  return (
    Number(a.acknowledged ?? false) - Number(b.acknowledged ?? false) ||
    severityRank(a.severity) - severityRank(b.severity) ||
    compareText(a.domain, b.domain) ||
    compareText(a.key, b.key)
  );
}

// Code-unit order, not locale order: output must not change with the runner's locale.
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const SIMPLE = /^[\w.:/@+~*,=%^-]+$/;

/**
 * A value as an operator reads it: simple strings bare, other strings quoted with escapes
 * (so whitespace and control characters show), null as "(absent)", a list of words comma-separated,
 * other objects as compact JSON.
 */
export function compactValue(value: unknown, maxChars = Infinity): string {
  const text =
    value === null || value === undefined
      ? "(absent)"
      : typeof value === "string" && SIMPLE.test(value)
        ? value
        : (wordList(value) ?? JSON.stringify(value));
  return text.length > maxChars ? `${text.slice(0, Math.max(0, maxChars - 1))}…` : text;
}

/**
 * An item's declared value as an operator reads it: in its domain's words where the raw value
 * would mislead (an unauthorized port is "not in the allow-list", not "closed").
 */
export function compactDeclared(item: DriftItem, maxChars = Infinity): string {
  return declaredWords(item) ?? compactValue(item.declared, maxChars);
}

/**
 * An item's live value as an operator reads it: in its domain's words where the raw value would
 * only repeat the key (an extra rule is "in the running ruleset").
 */
export function compactLive(item: DriftItem, maxChars = Infinity): string {
  return liveWords(item) ?? compactValue(item.live, maxChars);
}

/**
 * Latent drift in one line: "will become 1024 at reboot: /etc/sysctl.d/99-old.conf:3". Host text:
 * escape it or put it in code where it is shown.
 */
export function willBecome(latent: Latent, maxChars = Infinity): string {
  const line = `will become ${compactValue(latent.becomes)} at ${latent.after}: ${latent.because}`;
  return line.length > maxChars ? `${line.slice(0, Math.max(0, maxChars - 1))}…` : line;
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/** "unaudited since 2026-12-01T10:00:00.000Z, 2 runs": a node not audited, as history knows it. */
export function unauditedText(unaudited: NonNullable<NodeResult["unaudited"]>): string {
  const runs = plural(unaudited.runs, "run");
  return unaudited.never
    ? `never audited, first tried ${unaudited.since}, ${runs}`
    : `unaudited since ${unaudited.since}, ${runs}`;
}
