/** A shell-style glob (`*`, `?`, `[...]`) as an anchored regular expression; nothing else is special. */
export function globToRegExp(glob: string): RegExp {
  let source = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") source += ".*";
    else if (c === "?") source += ".";
    else if (c === "[") {
      const close = glob.indexOf("]", i + 2);
      if (close === -1) source += "\\[";
      else {
        const body = glob.slice(i + 1, close).replace(/^!/, "^").replace(/[\\\]]/g, "\\$&");
        source += `[${body}]`;
        i = close;
      }
    } else source += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

export function globMatch(glob: string, value: string): boolean {
  return globToRegExp(glob).test(value);
}
