// `adopt --files` globs (`/etc/app/*.conf`): expanded by the host's own shell, pathname expansion
// only, at most MAX_GLOB_MATCHES paths per pattern; each path the host gives is checked as the
// manifest checks a file's path, and one it would refuse is left out, said.
import { NodeSpec } from "../manifest/schema.js";
import { shellQuote } from "../probe/script.js";
import type { Transport } from "../transport/transport.js";

/** The most paths one pattern declares on one host; more are said, and the rest left out. */
export const MAX_GLOB_MATCHES = 200;

/** Whether a path has a glob character the host's shell would expand. */
export const isGlob = (path: string) => /[*?[]/.test(path);

/**
 * The host's script: each pattern expanded with IFS empty (no field splitting, no other
 * expansion of the text), existing paths only, one more than the cap so a cut is seen, NUL-ended.
 */
function globScript(patterns: readonly string[]): string {
  const lines = ["IFS=''"];
  for (const [i, pattern] of patterns.entries())
    lines.push(
      `n=0; p=${shellQuote(pattern)}; for f in $p; do`,
      `  [ -e "$f" ] || [ -L "$f" ] || continue; n=$((n + 1)); [ "$n" -gt ${MAX_GLOB_MATCHES + 1} ] && break`,
      `  printf '${i}\\t%s\\0' "$f"; done`,
    );
  return `${lines.join("\n")}\n`;
}

/**
 * `files` with each glob replaced by its matches on the host (in the shell's sorted order, after
 * the paths given literally, none twice), and what the operator is told about the expansion.
 */
export async function expandFileGlobs(
  transport: Transport,
  files: readonly string[],
  timeoutMs: number,
): Promise<{ files: string[]; notes: string[] }> {
  const patterns = files.filter(isGlob);
  if (!patterns.length) return { files: [...files], notes: [] };
  const run = await transport.run(globScript(patterns), {
    timeoutMs,
    maxOutputBytes: patterns.length * (MAX_GLOB_MATCHES + 1) * 4200,
  });
  const matches = patterns.map((): string[] => []);
  const refused = new Set<number>();
  for (const record of Buffer.from(run.stdout, "latin1").toString("utf8").split("\0")) {
    const tab = record.indexOf("\t");
    const i = Number(record.slice(0, tab));
    if (tab < 0 || !matches[i]) continue;
    const path = record.slice(tab + 1);
    if (NodeSpec.safeParse({ files: [{ path }] }).success) matches[i].push(path);
    else refused.add(i);
  }
  const notes: string[] = [];
  for (const [i, pattern] of patterns.entries()) {
    const found = matches[i]!;
    if (found.length > MAX_GLOB_MATCHES)
      notes.push(
        `--files ${pattern}: more than ${MAX_GLOB_MATCHES} matches; the first ${MAX_GLOB_MATCHES} declared (a narrower pattern declares the rest)`,
      );
    else if (!found.length && !refused.has(i)) notes.push(`--files ${pattern}: no match`);
    if (refused.has(i))
      notes.push(`--files ${pattern}: a match the manifest cannot declare as a path, left out`);
    matches[i] = found.slice(0, MAX_GLOB_MATCHES);
  }
  const literal = files.filter((f) => !isGlob(f));
  return { files: [...new Set([...literal, ...matches.flat()])], notes };
}
