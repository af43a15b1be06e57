// What GitHub would render as live Markdown in a body: everything outside fenced code blocks,
// code spans and <code> elements. Host text must never show up here.

/**
 * The body with fenced blocks, code spans and `<code>` elements removed (CommonMark's rules,
 * simplified).
 */
export function outsideCode(body: string): string {
  const kept: string[] = [];
  const lines = body.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,})[^`]*$/.exec(lines[i]!);
    if (!open) {
      kept.push(lines[i]!);
      continue;
    }
    const fence = open[1]!;
    i++;
    while (i < lines.length && !new RegExp(`^ {0,3}\`{${fence.length},}\\s*$`).test(lines[i]!)) i++;
  }
  let text = kept.join("\n").replace(/<code>[\s\S]*?<\/code>/g, "");
  // Code spans: a backtick run closes only at the next run of the same length.
  let out = "";
  for (let i = 0; i < text.length;) {
    if (text[i] !== "`") {
      out += text[i++];
      continue;
    }
    let n = 0;
    while (text[i + n] === "`") n++;
    const close = new RegExp(`(?<!\`)\`{${n}}(?!\`)`, "g");
    close.lastIndex = i + n;
    const match = close.exec(text);
    if (!match) {
      out += text.slice(i, i + n);
      i += n;
      continue;
    }
    i = match.index + n;
  }
  text = out;
  return text;
}
