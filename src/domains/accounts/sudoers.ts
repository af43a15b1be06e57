// Sudo rights as sudo reads them: the probe follows @include and @includedir on the host
// (sudoers(5): an included directory's files in sorted order, skipping names ending in `~` or
// holding a `.`; at most 128 nested includes) and sends each file's lines with their numbers; here
// the lines become entries: continuation lines joined, comments dropped, blanks collapsed.

/** One sudoers entry (a rule, an alias or a Defaults line) and where sudo reads it. */
export interface SudoEntry {
  rule: string;
  file: string;
  line: number;
}

/** sudo's limit of nested include files. */
export const MAX_INCLUDE_DEPTH = 128;
/** An include directive, the old `#include` form too (`#includedir` is no comment). */
export const INCLUDE = /^[ \t]*[@#]include(?:dir)?[ \t]/;

/**
 * The line without its comment: from a `#` that is not escaped and not a user ID (`#1000`), which
 * sudoers(5) reads as a user, not a comment.
 */
function uncommented(text: string): string {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === "#" && !/[0-9]/.test(text[i + 1] ?? "")) return text.slice(0, i);
  }
  return text;
}

/** A file's numbered lines as its entries, each at the line it starts on. */
export function sudoEntries(file: string, lines: readonly [number, string][]): SudoEntry[] {
  const entries: SudoEntry[] = [];
  let pending: { text: string; line: number } | undefined;
  for (const [number, raw] of lines) {
    if (!pending && INCLUDE.test(raw)) continue;
    const continued = /(?:^|[^\\])(?:\\\\)*\\$/.test(raw);
    const text = uncommented(continued ? raw.slice(0, -1) : raw);
    pending = pending
      ? { text: `${pending.text} ${text}`, line: pending.line }
      : { text, line: number };
    if (continued) continue;
    const rule = pending.text.replace(/[ \t]+/g, " ").trim();
    if (rule) entries.push({ rule, file, line: pending.line });
    pending = undefined;
  }
  const rule = pending?.text.replace(/[ \t]+/g, " ").trim();
  if (pending && rule) entries.push({ rule, file, line: pending.line });
  return entries;
}
