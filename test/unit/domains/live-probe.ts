// Runs one domain's probe for real through `sh -s`, framed exactly as an audit frames it.
import { execa } from "execa";
import type { AnyDomain } from "../../../src/domains/domain.js";
import {
  buildProbe,
  newNonce,
  parseContext,
  parseProbeOutput,
  probeContext,
} from "../../../src/probe/script.js";

export const NOBODY = [
  "setpriv",
  "--reuid=65534",
  "--regid=65534",
  "--clear-groups",
  "env",
  "-i",
  "PATH=/usr/bin:/bin",
  "sh",
  "-s",
];

export interface ProbeRun<Live> {
  live?: Live;
  unknown?: string;
  script: string;
  /** Everything the host sent back, to check what never leaves it. */
  stdout: string;
}

export async function runProbe<Live>(
  domain: AnyDomain,
  declared: unknown,
  options: { maxFileBytes?: number; command?: string[] } = {},
): Promise<ProbeRun<Live>> {
  const nonce = newNonce();
  const section = domain.probe(declared, probeContext(nonce, options.maxFileBytes ?? 1 << 20));
  const { script } = buildProbe(nonce, [{ name: domain.name, script: section }]);
  const [file, ...args] = options.command ?? ["sh", "-s"];
  const result = await execa(file!, args, {
    input: script,
    encoding: "latin1",
    stripFinalNewline: false,
  });
  const out = parseProbeOutput(result.stdout, nonce).get(domain.name)!;
  if (out.unknown !== undefined) return { unknown: out.unknown, script, stdout: result.stdout };
  return {
    live: domain.parse(out.output, parseContext(nonce)) as Live,
    script,
    stdout: result.stdout,
  };
}
