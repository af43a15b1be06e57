// What no pull request may say: a change from a value to the same value ("kernel_version
// 6.1.0-28-amd64 → 6.1.0-28-amd64", "declared `x` but the host runs `x`", a table row whose declared
// and live cells are one text). The GitHub double checks every PR a test opens or edits with it
// when it stops.
import assert from "node:assert/strict";

/** A pull request as the GitHub double (or GitHub) returns it. */
export interface PullText {
  number?: number;
  title: string;
  body?: string | null;
}

// A value beside an arrow: a code span, or a run of non-space characters.
const VALUE = "(`[^`\\n]*`|[^\\s`|→]+)";
const ARROW = new RegExp(`${VALUE} → (?=${VALUE})`, "gu");
const DECLARED_LIVE = /declared (`[^`\n]*`) but the hosts? runs? (`[^`\n]*`)/gu;

/** A value as a reader compares it: without its code span's backticks or a closing comma. */
const bare = (value: string) => value.replace(/^`|`$/g, "").replace(/[.,;:)]+$/u, "");

/** Each place in `line` that states a change from a value to itself. */
export function selfChanges(line: string, tableHead?: readonly string[]): string[] {
  const found: string[] = [];
  for (const match of line.matchAll(ARROW)) {
    const after = line.slice(match.index + match[0].length);
    const next = new RegExp(`^${VALUE}`, "u").exec(after)![1]!;
    if (bare(match[1]!) === bare(next)) found.push(`${match[1]} → ${next}`);
  }
  for (const match of line.matchAll(DECLARED_LIVE))
    if (bare(match[1]!) === bare(match[2]!)) found.push(match[0]);
  const declared = tableHead?.indexOf("declared") ?? -1;
  const live = tableHead?.indexOf("live") ?? -1;
  if (declared >= 0 && live >= 0 && line.startsWith("|") && !/^[|:\s-]+$/u.test(line)) {
    const cells = tableCells(line);
    if (cells[declared] !== undefined && cells[declared] === cells[live])
      found.push(`declared and live both ${cells[declared]}`);
  }
  return found;
}

/** A Markdown table row's cells, trimmed; escaped pipes stay inside their cell. */
function tableCells(line: string): string[] {
  return line
    .replace(/^\||\|$/g, "")
    .split(/(?<!\\)\|/u)
    .map((cell) => cell.trim());
}

/**
 * Fails when the title or a line of the body of any of `pulls` states a change from a value to the
 * same value, naming the PR and the line.
 */
export function assertNoSelfChange(pulls: readonly PullText[]): void {
  const problems: string[] = [];
  for (const pull of pulls) {
    const name = `PR ${pull.number ?? "?"} (${pull.title})`;
    for (const found of selfChanges(pull.title)) problems.push(`${name} title: ${found}`);
    let head: string[] | undefined;
    for (const line of (pull.body ?? "").split("\n")) {
      if (line.startsWith("| node |")) head = tableCells(line);
      else if (!line.startsWith("|")) head = undefined;
      for (const found of selfChanges(line, head))
        problems.push(`${name} body: ${found}\n  ${line}`);
    }
  }
  assert.deepEqual(problems, [], problems.join("\n"));
}
