// Shell-style globs for node names, waivers and block devices, matched by picomatch in bash mode
// (`*` also crosses `/`, as in a waiver key like /etc/app/*), with braces, extglobs and negation
// off: `*`, `?` and `[...]` are the only special characters an operator needs to think about.
import picomatch from "picomatch";

const OPTIONS: picomatch.PicomatchOptions = {
  bash: true,
  dot: true,
  nobrace: true,
  noextglob: true,
  nonegate: true,
  posix: true,
};
const compiled = new Map<string, (value: string) => boolean>();

/**
 * What is wrong with a glob, naming the character where it goes wrong (1-based), or undefined.
 * picomatch would read an unclosed `[` literally and a reversed range as matching nothing.
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
        if (close !== -1) j = close + 1;
      } else if (
        glob[j + 1] === "-" &&
        glob[j + 2] !== undefined &&
        glob[j + 2] !== "]" &&
        glob[j]! > glob[j + 2]!
      ) {
        return `the range ${glob.slice(j, j + 3)} at character ${j + 1} is backwards`;
      }
    }
    if (j >= glob.length) return `the [ at character ${i + 1} is never closed`;
    i = j;
  }
  return undefined;
}

export function isGlob(pattern: string): boolean {
  return /[*?[]/.test(pattern);
}

/** Whether `value` matches `glob`; each glob is compiled once. Throws on a glob with a problem. */
export function globMatch(glob: string, value: string): boolean {
  let matcher = compiled.get(glob);
  if (!matcher) {
    const problem = globProblem(glob);
    if (problem) throw new Error(`bad glob "${glob}": ${problem}`);
    compiled.set(glob, (matcher = picomatch(glob, OPTIONS)));
  }
  return matcher(value);
}
