// Host and contributor text is data. Before it reaches a terminal, a log or a CI runner it goes
// through `visible`: an ESC could repaint the screen, a bidi override could reorder what a reviewer
// reads, a CR could hide a line, and a line starting with `::` is a GitHub Actions workflow
// command.

// C0 and C1 controls, DEL, format characters (bidi overrides and isolates, zero-width characters,
// soft hyphen, BOM) and the Unicode line and paragraph separators. Tab and newline are handled
// below.
const INVISIBLE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function escapeChar(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
}

/**
 * Untrusted text as it may be printed: every control, bidi and invisible format character shown as
 * an escape (`\x1b`, `\u{202e}`). With `multiline`, newlines and tabs stay, and a line that would
 * start with `::` (after blanks) gets its first colon escaped, so no runner reads it as a command.
 * One line of output (the default) escapes newlines too. Linear in the length of the text.
 */
export function visible(text: string, options: { multiline?: boolean } = {}): string {
  const kept = options.multiline ? /[\n\t]/ : undefined;
  const escaped = text.replace(INVISIBLE, (char) => (kept?.test(char) ? char : escapeChar(char)));
  // Single-line text can still start with `::` when printed at the start of a line.
  return escaped.replace(/^([ \t]*):(?=:)/gm, "$1\\x3a");
}
