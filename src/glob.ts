// Shell-style globs for node names, waivers and block devices: nothing but `*`, `?` and `[...]` is special.

/** Shell-style glob (`*`, `?`, `[...]`, `[!...]`) -> anchored RegExp. Throws on an unterminated `[`. */
export function globToRegExp(glob: string): RegExp {
  let source = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") source += ".*";
    else if (c === "?") source += ".";
    else if (c === "[") {
      let j = i + 1;
      if (glob[j] === "!" || glob[j] === "^") j++;
      if (glob[j] === "]") j++; // a leading ] is a member, as in sh
      const close = glob.indexOf("]", j);
      if (close === -1) throw new Error(`unterminated [ in "${glob}"`);
      const negate = glob[i + 1] === "!" || glob[i + 1] === "^";
      const members = glob.slice(negate ? i + 2 : i + 1, close).replace(/[\\\]\[^]/g, "\\$&");
      source += `[${negate ? "^" : ""}${members}]`;
      i = close;
    } else source += c.replace(/[.+^${}()|\\\]]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

export function isGlob(pattern: string): boolean {
  return /[*?[]/.test(pattern);
}

/** Whether `glob` compiles (an unterminated `[` does not). */
export function isValidGlob(glob: string): boolean {
  try {
    globToRegExp(glob);
    return true;
  } catch {
    return false;
  }
}

export function globMatch(glob: string, value: string): boolean {
  return globToRegExp(glob).test(value);
}
