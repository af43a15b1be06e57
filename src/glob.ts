// Shell-style globs for node names, waivers and block devices, as sh's fnmatch reads them without
// special cases: `*` is any text (`/` and dot names included, as in a waiver key like /etc/app/*),
// `?` one character, `[...]` a class, `\` quotes the next character; braces, extglobs and negation
// are plain text. Matched by a two-pointer scan, O(glob × text) whatever the glob: a regex engine
// backtracks exponentially on `*a*a*a*a*a*a*a*b`, and a waiver glob is written by any contributor.

const POSIX_CLASSES: Record<string, RegExp> = {
  alnum: /[A-Za-z0-9]/,
  alpha: /[A-Za-z]/,
  ascii: /[\x00-\x7f]/,
  blank: /[ \t]/,
  cntrl: /[\x00-\x1f\x7f]/,
  digit: /[0-9]/,
  graph: /[\x21-\x7e]/,
  lower: /[a-z]/,
  print: /[\x20-\x7e]/,
  punct: /[!-/:-@[-`{-~]/,
  space: /[ \t\n\v\f\r]/,
  upper: /[A-Z]/,
  word: /[A-Za-z0-9_]/,
  xdigit: /[A-Fa-f0-9]/,
};

/**
 * What is wrong with a glob, naming the character where it goes wrong (1-based), or undefined: an
 * unclosed `[`, a backwards range or an unknown `[:class:]`.
 */
export function globProblem(glob: string): string | undefined {
  for (let i = 0; i < glob.length; i++) {
    if (glob[i] === "\\") {
      i++;
      continue;
    }
    if (glob[i] !== "[") continue;
    let j = i + 1;
    if (glob[j] === "!" || glob[j] === "^") j++;
    if (glob[j] === "]") j++; // a leading ] is a member, as in sh
    for (; j < glob.length && glob[j] !== "]"; j++) {
      if (glob[j] === "[" && glob[j + 1] === ":") {
        const close = glob.indexOf(":]", j + 2);
        if (close === -1) continue;
        const name = glob.slice(j + 2, close);
        if (!Object.hasOwn(POSIX_CLASSES, name))
          return `[:${name}:] at character ${j + 1} is no character class (${Object.keys(POSIX_CLASSES).join(", ")})`;
        j = close + 1;
        continue;
      }
      if (glob[j] === "\\") j++;
      const low = glob[j];
      let k = j + 1;
      if (glob[k] !== "-" || glob[k + 1] === undefined || glob[k + 1] === "]") continue;
      if (glob[k + 1] === "\\") k++;
      const high = glob[k + 1];
      if (high !== undefined && low !== undefined && low > high)
        return `the range ${glob.slice(j, k + 2)} at character ${j + 1} is backwards`;
      j = k + 1;
    }
    if (j >= glob.length) return `the [ at character ${i + 1} is never closed`;
    i = j;
  }
  return undefined;
}

export function isGlob(pattern: string): boolean {
  return /[*?[]/.test(pattern);
}

/** A glob read into what each step matches: any text, or one character passing a test. */
type Step = "*" | ((char: string) => boolean);

/** The class opening at chars[start] (a `[`, known to close), and the index of its `]`. */
function readClass(chars: readonly string[], start: number): [Step, number] {
  let j = start + 1;
  const negated = chars[j] === "!" || chars[j] === "^";
  if (negated) j++;
  const members: ((char: string) => boolean)[] = [];
  // globProblem found the closing ]: the length check only guards the loop.
  for (let first = true; j < chars.length && (chars[j] !== "]" || first); first = false) {
    if (chars[j] === "[" && chars[j + 1] === ":") {
      const close = chars.indexOf(":", j + 2);
      const name = chars.slice(j + 2, close).join("");
      if (chars[close + 1] === "]" && Object.hasOwn(POSIX_CLASSES, name)) {
        const posix = POSIX_CLASSES[name]!;
        members.push((char) => posix.test(char));
        j = close + 2;
        continue;
      }
    }
    if (chars[j] === "\\") j++;
    const low = chars[j]!;
    if (chars[j + 1] === "-" && chars[j + 2] !== undefined && chars[j + 2] !== "]") {
      j += 2;
      if (chars[j] === "\\") j++;
      const high = chars[j]!;
      members.push((char) => char >= low && char <= high);
    } else {
      members.push((char) => char === low);
    }
    j++;
  }
  return [(char) => members.some((member) => member(char)) !== negated, j];
}

function compile(glob: string): Step[] {
  const chars = Array.from(glob);
  const steps: Step[] = [];
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i]!;
    if (char === "*") {
      if (steps.at(-1) !== "*") steps.push("*");
    } else if (char === "?") {
      steps.push(() => true);
    } else if (char === "[") {
      const [step, end] = readClass(chars, i);
      steps.push(step);
      i = end;
    } else {
      const literal = char === "\\" && i + 1 < chars.length ? chars[++i]! : char;
      steps.push((c) => c === literal);
    }
  }
  return steps;
}

/**
 * Whether `text` matches the steps: each `*` first takes nothing, and on a mismatch only the last
 * `*` seen takes one character more (an earlier one never needs to, as any text it would take the
 * last one can take instead).
 */
function matches(steps: readonly Step[], text: string): boolean {
  const chars = Array.from(text);
  let s = 0;
  let c = 0;
  let star = -1;
  let starAt = 0;
  while (c < chars.length) {
    const step = steps[s];
    if (step === "*") {
      star = s++;
      starAt = c;
    } else if (step?.(chars[c]!)) {
      s++;
      c++;
    } else if (star === -1) {
      return false;
    } else {
      s = star + 1;
      c = ++starAt;
    }
  }
  while (steps[s] === "*") s++;
  return s === steps.length;
}

const compiled = new Map<string, Step[]>();

/** Whether `value` matches `glob`; each glob is compiled once. Throws on a glob with a problem. */
export function globMatch(glob: string, value: string): boolean {
  let steps = compiled.get(glob);
  if (!steps) {
    const problem = globProblem(glob);
    if (problem) throw new Error(`bad glob "${glob}": ${problem}`);
    compiled.set(glob, (steps = compile(glob)));
  }
  return matches(steps, value);
}

/** ssh's match_pattern: `*` any text, `?` one character, nothing else special. */
function wildcard(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    if (p < pattern.length && (pattern[p] === "?" || pattern[p] === text[t])) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      resume = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++resume;
    } else return false;
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}

/** A pattern list (`Host` words, or a comma list): one positive match and no negated one. */
export function sshPatternsMatch(patterns: readonly string[], text: string): boolean {
  let matched = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith("!");
    if (wildcard(negated ? pattern.slice(1) : pattern, text)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}
