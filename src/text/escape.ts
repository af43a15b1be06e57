// Host and contributor text is data. Before it reaches a terminal, a log or a CI runner it goes
// through `visible`: an ESC could repaint the screen, a bidi override could reorder what a reviewer
// reads, a CR could hide a line, and a line the GitHub Actions runner reads as a workflow command
// could annotate, mask or stop the log.

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
 * Where a stream of text stands in its current line, for `defuseRunnerCommands`: whether only
 * blanks came since the line began (`blank`), or a first colon after them (`colon`); and how many
 * `#` end the text so far.
 */
export interface LineState {
  lead: "blank" | "colon" | "text";
  hashes: number;
}

export const lineStart = (): LineState => ({ lead: "blank", hashes: 0 });

/** What stands for the character completing a runner command: the second colon, the bracket. */
export interface RunnerEscapes {
  colon: string;
  bracket: string;
}

const JSON_ESCAPES: RunnerEscapes = { colon: "\\u003a", bracket: "\\u005b" };

// What the runner strips before it looks for `::`: whitespace, Unicode spaces and BOM included;
// format characters too, as a comparison that ignores them would.
const LEADING_BLANK = /^[\s\p{Cf}]$/u;

/**
 * The one rule for text a GitHub Actions runner may read: no line holds a command it acts on, that
 * is `::` after any leading blanks (Unicode spaces too) or the legacy `##[` anywhere. The character
 * completing such a pattern, the second colon or the bracket, becomes `\u003a` or `\u005b` by
 * default: an escape that means the same character in a JSON string and a YAML double-quoted
 * scalar, so data written that way still reads back exactly; a format with escapes of its own
 * passes them as `escapes`. CR and LF both start a line, as they do for the runner. `state` carries
 * the line across calls, for text written in pieces. Linear.
 */
export function defuseRunnerCommands(
  text: string,
  state: LineState = lineStart(),
  escapes: RunnerEscapes = JSON_ESCAPES,
): string {
  // Most text has neither a colon nor a bracket: only its last line matters for what follows.
  if (!/[:[]/.test(text)) {
    const lastBreak = Math.max(text.lastIndexOf("\n"), text.lastIndexOf("\r"));
    if (lastBreak !== -1) Object.assign(state, lineStart());
    for (const char of text.slice(lastBreak + 1)) advance(state, char);
    return text;
  }
  const pieces: string[] = [];
  let from = 0;
  let at = 0;
  for (const char of text) {
    const completes =
      (char === ":" && state.lead === "colon") || (char === "[" && state.hashes >= 2);
    if (completes) {
      pieces.push(text.slice(from, at), char === ":" ? escapes.colon : escapes.bracket);
      from = at + 1;
    }
    advance(state, completes ? "\\" : char);
    at += char.length;
  }
  pieces.push(text.slice(from));
  return pieces.join("");
}

function advance(state: LineState, char: string): void {
  if (char === "\n" || char === "\r") {
    state.lead = "blank";
    state.hashes = 0;
    return;
  }
  state.hashes = char === "#" ? Math.min(state.hashes + 1, 2) : 0;
  if (state.lead === "blank" && char === ":") state.lead = "colon";
  else if (!(state.lead === "blank" && LEADING_BLANK.test(char))) state.lead = "text";
}

/**
 * Untrusted text as it may be printed: every control, bidi and invisible format character shown as
 * an escape (`\x1b`, `\u{202e}`), and no runner command (see `defuseRunnerCommands`). With
 * `multiline`, newlines and tabs stay. One line of output (the default) escapes newlines too.
 * Linear in the length of the text.
 */
export function visible(text: string, options: { multiline?: boolean } = {}): string {
  const kept = options.multiline ? /[\n\t]/ : undefined;
  const escaped = text.replace(INVISIBLE, (char) => (kept?.test(char) ? char : escapeChar(char)));
  // Single-line text is checked as if printed at the start of a line.
  return defuseRunnerCommands(escaped);
}
