// Runs one domain's probe for real through `sh -s`, framed exactly as an audit frames it.
import { execa } from "execa";
import type { AnyDomain } from "../../../src/domains/registry.js";
import {
  buildProbe,
  newNonce,
  parseContext,
  parseProbeOutput,
  probeContext,
} from "../../../src/probe/script.js";
import { NOBODY } from "../../support/local-node.js";
import { sampleOf } from "../../support/samples.js";

export { NOBODY };

export interface ProbeRun<Live> {
  live?: Live;
  unknown?: string;
  script: string;
  /** Everything the host sent back, to check what never leaves it. */
  stdout: string;
}

/**
 * Host paths a probe reads from a scratch directory instead: each of `paths` (a file or a
 * directory the probe names) is prefixed with `dir` in the script, and `dir` is taken out of what
 * the host sends, so captured host files are probed as if they were the host's own.
 */
export interface Rooted {
  dir: string;
  paths: readonly string[];
}

export function rooted(script: string, root: Rooted): string {
  // Longest first, and only where a path starts (after a blank, quote or `=`): /lib/sysctl.d
  // must not match inside /usr/lib/sysctl.d.
  const paths = [...root.paths].sort((a, b) => b.length - a.length);
  const escaped = paths.map((p) => p.replaceAll(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  // /dev/null stays the machine's: the probe's discarded errors go there in any tree, and its test
  // that /dev/null is the null device is of the machine's.
  return script.replaceAll(
    new RegExp(`(?<=[\\s'"=])(${escaped.join("|")})`, "g"),
    (path: string, _: string, at: number) =>
      script.startsWith("/dev/null", at) ? path : `${root.dir}${path}`,
  );
}

export async function runProbe<Live>(
  domain: AnyDomain,
  declared: unknown,
  options: {
    maxFileBytes?: number;
    command?: string[];
    /** Without `paths`: every path the domain's probe reads (its sample's `reads`). */
    root?: Omit<Rooted, "paths"> & Partial<Rooted>;
    /** A change to the script before it runs (after `root`'s). */
    edit?: (script: string) => string;
  } = {},
): Promise<ProbeRun<Live>> {
  const nonce = newNonce();
  const ctx = probeContext(nonce, options.maxFileBytes ?? 1 << 20);
  const section = domain.probe(declared, ctx);
  // `set -u`: a section reads only variables it set itself, whatever path it takes here
  // (test/unit/probe/isolation.test.ts says why).
  const built = `set -u\n${buildProbe(nonce, [{ name: domain.name, script: section, awk: domain.awk }], ctx.statAsks).script}`;
  const root = options.root && {
    dir: options.root.dir,
    paths: options.root.paths ?? (await sampleOf(domain)).reads,
  };
  const inTree = root ? rooted(built, root) : built;
  const script = options.edit ? options.edit(inTree) : inTree;
  const [file, ...args] = options.command ?? ["sh", "-s"];
  const result = await execa(file!, args, {
    input: script,
    encoding: "latin1",
    stripFinalNewline: false,
  });
  const stdout = options.root ? result.stdout.replaceAll(options.root.dir, "") : result.stdout;
  const out = parseProbeOutput(stdout, nonce).get(domain.name)!;
  if (out.unknown !== undefined) return { unknown: out.unknown, script, stdout };
  return { live: domain.parse(out.output, parseContext(nonce)) as Live, script, stdout };
}
