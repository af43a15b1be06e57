// The one Markdown toolkit for text Quartermaster does not control (host output, manifest values):
// PR bodies and job summaries put it only in code spans or fenced blocks, where GitHub renders no
// HTML, mentions, links or comments; text cells escape every markup character.
import { visible } from "./escape.js";

export function longestRun(text: string, char: string): number {
  let longest = 0;
  let run = 0;
  for (const c of text) {
    run = c === char ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return longest;
}

export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"]/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!,
  );
}

// A comment opener is shown as `<\x21--`: raw, it could pass for a hidden marker in the body's
// source.
const noComment = (text: string) => text.replaceAll("<!--", "<\\x21--");

/** Shortened to `chars` characters, with an ellipsis saying so. */
export function truncate(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, Math.max(0, chars - 1))}…` : text;
}

/**
 * Plain text (no markup, no HTML, no row breaks): for names a contributor chose, never for host
 * output.
 */
export function textCell(text: string): string {
  return escapeHtml(noComment(visible(text, { multiline: true })))
    .replace(/[\\`*_[\]|~]/g, (c) => `\\${c}`)
    .replace(/\r?\n/g, "<br>");
}

function span(flat: string): string {
  const fence = "`".repeat(longestRun(flat, "`") + 1);
  const pad = flat.startsWith("`") || flat.endsWith("`") || flat.trim() === "" ? " " : "";
  return `${fence}${pad}${flat}${pad}${fence}`;
}

/**
 * Literal text as a one-line code span: the fence outgrows any backtick run inside, newlines shown
 * as \n.
 */
export function codeSpan(text: string, maxChars = Infinity): string {
  return span(truncate(noComment(visible(text)), maxChars));
}

/**
 * A code span in a table cell: pipes escaped too (GitHub splits cells before it parses code spans).
 */
export function codeCell(text: string, maxChars = Infinity): string {
  return span(truncate(noComment(visible(text)), maxChars).replace(/\|/g, "\\|"));
}

/** Literal text inside HTML (a `<summary>`): a `<code>` element, where GitHub links no mention. */
export function htmlCode(text: string, maxChars = Infinity): string {
  return `<code>${escapeHtml(truncate(noComment(visible(text)), maxChars))}</code>`;
}

/**
 * Literal lines in a fenced block whose fence is longer than any backtick run inside, so no line
 * can close it; at most `maxLines` lines and `maxChars` characters, the rest counted.
 */
export function fencedBlock(
  text: string,
  info = "",
  limits: { maxLines?: number; maxChars?: number } = {},
): string {
  const { maxLines = Infinity, maxChars = Infinity } = limits;
  const lines = noComment(visible(text, { multiline: true }))
    .replace(/\n$/, "")
    .split("\n");
  let kept = lines.slice(0, maxLines);
  let size = 0;
  const fit = kept.findIndex((line) => (size += line.length + 1) > maxChars);
  if (fit !== -1)
    kept = [
      ...kept.slice(0, fit),
      truncate(kept[fit]!, Math.max(1, maxChars - (size - kept[fit]!.length - 1))),
    ];
  const left = lines.length - kept.length;
  if (left > 0) kept.push(`… ${left} more line${left === 1 ? "" : "s"} in the full report`);
  const fence = "`".repeat(Math.max(3, longestRun(kept.join("\n"), "`") + 1));
  return [`${fence}${info}`, ...kept, fence].join("\n");
}

/** Node names for a title: the first `max`, each as `show` writes it, and how many more. */
export function nodeList(
  names: readonly string[],
  max = 3,
  show: (name: string) => string = (name) => name,
): string {
  const shown = names.slice(0, max).map(show).join(", ");
  return names.length <= max ? shown : `${shown} and ${names.length - max} more`;
}

/** Node names in Markdown (a body, a comment): code spans, so a name like `@team` mentions no one. */
export const nodeSpans = (names: readonly string[], max = 10) =>
  nodeList(names, max, (name) => codeSpan(name));
