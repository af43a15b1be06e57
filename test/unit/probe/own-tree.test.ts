import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import type { AnyDomain } from "../../../src/domains/registry.js";
import { buildProbe, newNonce, probeContext } from "../../../src/probe/script.js";
import { allSamples } from "../../support/samples.js";
import { rooted } from "../domains/live-probe.js";

// A probe section's tests give it a tree of their own (`runProbe`'s `root`): captured host files
// stand for the host's. A path the section reads that the tree does not redirect is this machine's
// own, and a test then passes or fails with what is installed here (modprobe.d files shipped by
// udev once turned a kernel_modules test red). strace shows every path each section looks up or
// opens: on this machine, each must be one its sample's `reads` redirects; in a tree, none may be
// outside it.

const BIN_DIRS = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
/**
 * What the tools read for themselves, not for the section: loader, locale, stat's SELinux check,
 * grep's and ss's own, nft's symbolic names (iproute2's tables, connlabel.conf) and its random seed.
 */
const TOOLS_OWN = [
  "/etc/ld.so.",
  "/lib/x86_64-linux-gnu/",
  "/usr/lib/x86_64-linux-gnu/",
  "/lib64/",
  "/usr/lib/locale/",
  "/dev/null",
  "/proc/self/",
  "/proc/filesystems",
  "/sys/fs/selinux",
  "/selinux",
  "/etc/selinux/",
  "/etc/nsswitch.conf",
  "/proc/mounts",
  "/sys/fs/cgroup/unified",
  "/etc/iproute2/",
  "/etc/connlabel.conf",
  "/dev/urandom",
];

/**
 * Reads no tree redirects, each with why: `getent passwd` (ports' holders' user names) asks the
 * host's name service, which reads /etc/passwd (or a directory service) itself.
 */
const NOT_REDIRECTABLE: Record<string, string[]> = { ports: ["/etc/passwd"] };
/**
 * The probe's one stat's own (`ProbeContext.stat`), read wherever a section asks it: its format,
 * every ask's, names each path's owner (the name service) and its local time (the zone: `TZ`'s
 * where a test sets it).
 */
const STAT_OWN = ["/etc/passwd", "/etc/localtime", "/usr/share/zoneinfo/"];
const statOwn = (file: string) => STAT_OWN.some((p) => file.startsWith(p));

const within = (file: string, dir: string) =>
  file === dir || file.startsWith(`${dir.replace(/\/$/, "")}/`);
const toolsOwn = (file: string) =>
  BIN_DIRS.includes(path.dirname(file)) || TOOLS_OWN.some((p) => file.startsWith(p));

const scratch = mkdtempSync(path.join(tmpdir(), "qm-own-tree-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The absolute paths `script` (run by `sh -s` in `cwd`) looks up or opens, tools' own aside. */
async function pathsRead(script: string, cwd: string): Promise<string[]> {
  const trace = path.join(scratch, `trace-${newNonce()}`);
  await execa("strace", ["-f", "-qq", "-e", "trace=%file", "-o", trace, "sh", "-s"], {
    input: script,
    cwd,
    // sh checks $PWD against its working directory.
    env: { PWD: cwd },
    reject: false,
  });
  const read = new Set<string>();
  for (const line of readFileSync(trace, "latin1").split("\n")) {
    const m = /^\d+ +\w+\((?:AT_FDCWD, |\d+, )?"(\/[^"]*)"/.exec(line);
    // The directories on the way to the tree are looked up too (a no-follow check walks them).
    if (m && !toolsOwn(m[1]!) && !within(m[1]!, cwd) && !within(cwd, m[1]!)) read.add(m[1]!);
  }
  rmSync(trace, { force: true });
  return [...read];
}

function section(domain: AnyDomain, declared: unknown): string {
  const nonce = newNonce();
  const ctx = probeContext(nonce, 4096);
  return buildProbe(
    nonce,
    [{ name: domain.name, script: domain.probe(declared, ctx), awk: domain.awk }],
    ctx.statAsks,
  ).script;
}

/** The paths read that none of `reads` redirects, the directories on the way to them aside. */
const unredirected = (read: readonly string[], reads: readonly string[]) =>
  read.filter((file) => !reads.some((dir) => within(file, dir) || within(dir, file)));

const samples = await allSamples();
const tree = mkdtempSync(path.join(scratch, "tree-"));

describe("a probe section reads only what its tests can redirect to their own tree", () => {
  for (const { domain, sample } of samples)
    for (const [kind, declared] of [
      ["declared", sample.declared],
      ["snapshot", undefined],
    ] as const)
      it(`${domain.name}, ${kind}: on this machine, every path it reads is in its sample's reads; in a tree, none outside it`, async () => {
        const script = section(domain, declared);
        const asks = script.includes("qm_stat() {");
        const own = (file: string) => asks && statOwn(file);
        const read = await pathsRead(script, scratch);
        assert.deepEqual(
          unredirected(read, sample.reads).filter((file) => !own(file)),
          [],
        );
        const inTree = rooted(script, { dir: tree, paths: sample.reads });
        const outside = await pathsRead(inTree, tree);
        const known = NOT_REDIRECTABLE[domain.name] ?? [];
        assert.deepEqual(
          outside.filter((file) => !known.includes(file) && !own(file)),
          [],
        );
      });

  it("tells a path the sample's reads leave out", async () => {
    const script =
      "export PATH=/usr/bin:/bin LC_ALL=C; read -r h < /etc/hostname; cat /proc/sys/kernel/osrelease >/dev/null; true";
    assert.deepEqual(unredirected(await pathsRead(script, scratch), ["/proc/sys/kernel"]), [
      "/etc/hostname",
    ]);
  });
});
