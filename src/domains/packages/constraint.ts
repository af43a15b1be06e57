// What `installed_manifest` may declare for a package, and whether a live version meets it.
import type { PackageFormat } from "./parse.js";
import { COMPARE_VERSIONS } from "./version.js";

export const ANY_VERSION = "*";
export const ABSENT = "absent";

const OPERATORS = [">=", "<=", "!=", ">", "<", "="] as const;
type Operator = (typeof OPERATORS)[number];

export type Constraint =
  | { kind: "any" }
  | { kind: "absent" }
  /** One version, or a snapshot's `V (arch), V (arch)` for a package installed side by side. */
  | { kind: "exact"; version: string }
  /** `*` stands for any run of characters: `9.*`. */
  | { kind: "glob"; parts: string[] }
  /** Comparisons in the package manager's own order, all of which must hold: `>= 1.2, < 2`. */
  | { kind: "range"; clauses: { operator: Operator; version: string }[] };

const VERSION = /^[A-Za-z0-9.+~^:_-]+$/;
const INSTANCE = /^[A-Za-z0-9.+~^:_-]+(?: \([^()\s,]*(?:, [^()\s,]*)*\))?$/;

/** Splits a snapshot's `V (a, b), W (c)` at the commas between instances only. */
function instances(text: string): string[] {
  return text.split(/, (?=[^()]*(?:\(|$))/);
}

/**
 * The states configuration tools declare a package in (Ansible's `state:`, Puppet's `ensure:`,
 * Salt's), which read as a version here and would be drift on every audit: what to declare
 * instead. No package manager's versions are words like these (dpkg's and apk's start with a
 * digit).
 */
const STATE_WORDS = new Map([
  ["present", ANY_VERSION],
  ["installed", ANY_VERSION],
  ["latest", ANY_VERSION],
  ["removed", ABSENT],
  ["purged", ABSENT],
  ["uninstalled", ABSENT],
]);

/** The constraint a declared value states, or the reason it states none. */
export function parseConstraint(text: string): Constraint | { error: string } {
  if (text === ANY_VERSION) return { kind: "any" };
  if (text === ABSENT) return { kind: "absent" };
  const instead = STATE_WORDS.get(text.toLowerCase());
  if (instead)
    return {
      error: `"${text}" is a package state, not a version: declare "${instead}"${instead === ANY_VERSION ? " for any installed version (an audit never upgrades)" : ""}`,
    };
  if (/^[<>=!]/.test(text)) {
    const clauses: { operator: Operator; version: string }[] = [];
    for (const clause of text.split(",")) {
      const m = /^\s*(>=|<=|!=|>|<|=)\s*(\S+)\s*$/.exec(clause);
      if (!m)
        return {
          error: `"${clause.trim()}" is not a comparison like ">= 1.2" (operators: ${OPERATORS.join(" ")})`,
        };
      if (!VERSION.test(m[2]!)) return { error: `"${m[2]}" is not a version` };
      clauses.push({ operator: m[1] as Operator, version: m[2]! });
    }
    return { kind: "range", clauses };
  }
  if (text.includes("*")) {
    if (!/^[A-Za-z0-9.+~^:_*-]+$/.test(text))
      return { error: `"${text}" is not a version pattern like "9.*"` };
    return { kind: "glob", parts: text.split("*") };
  }
  if (!instances(text).every((i) => INSTANCE.test(i))) {
    return {
      error: `"${text}" is not a version, "*", "absent", a pattern like "9.*" or comparisons like ">= 1.2, < 2"`,
    };
  }
  return { kind: "exact", version: text };
}

/**
 * Whether `text` matches the glob's parts (split at `*`): greedy left to right, linear in the text.
 */
function globMatch(parts: readonly string[], text: string): boolean {
  if (parts.length === 1) return text === parts[0];
  const first = parts[0]!;
  const last = parts.at(-1)!;
  if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last))
    return false;
  let at = first.length;
  const end = text.length - last.length;
  for (const middle of parts.slice(1, -1)) {
    const found = text.indexOf(middle, at);
    if (found === -1 || found + middle.length > end) return false;
    at = found + middle.length;
  }
  return true;
}

/** dpkg and rpm both treat a missing epoch as epoch 0. */
const withoutZeroEpoch = (version: string) => version.replace(/^0:/, "");

const HOLDS: Record<Operator, (order: number) => boolean> = {
  ">=": (o) => o >= 0,
  "<=": (o) => o <= 0,
  ">": (o) => o > 0,
  "<": (o) => o < 0,
  "=": (o) => o === 0,
  "!=": (o) => o !== 0,
};

/**
 * Whether the live versions (one per installed instance; none when not installed) meet the
 * declared constraint. Every instance must meet a pattern or a range.
 */
export function satisfies(
  constraint: Constraint,
  live: readonly string[],
  joined: string,
  format: PackageFormat,
): boolean {
  switch (constraint.kind) {
    case "absent":
      return live.length === 0;
    case "any":
      return live.length > 0;
    case "exact":
      return live.length > 0 && withoutZeroEpoch(constraint.version) === withoutZeroEpoch(joined);
    case "glob":
      return (
        live.length > 0 &&
        live.every(
          (v) => globMatch(constraint.parts, v) || globMatch(constraint.parts, withoutZeroEpoch(v)),
        )
      );
    case "range": {
      const compare = COMPARE_VERSIONS[format];
      return (
        live.length > 0 &&
        live.every((v) => constraint.clauses.every((c) => HOLDS[c.operator](compare(v, c.version))))
      );
    }
  }
}
