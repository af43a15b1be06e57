// The single executable (`npm run build:exe`) on a machine without Node: PATH holds no `node`, and
// Node's binaries are hidden (a private mount namespace binds /dev/null over them), so nothing it
// does can fall back to an installed Node. Needs root (mount namespace).
import assert from "node:assert/strict";
import { mkdir, readdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { EXECUTABLE, ensureExecutable } from "../support/cli.js";
import { removeTree, writeTree } from "../support/tree.js";
import { Watcher } from "../support/watcher.js";

const NODE_NAMES = new Set(["node", "nodejs", "npm", "npx", "corepack"]);
let root: string;
let noNode: string[];
let swappiness: number;

/** Runs `command` in a mount namespace where Node's binaries are /dev/null, with PATH `root/bin`. */
function withoutNode(command: string[]) {
  const [file, ...args] = [...noNode, ...command];
  return execa(file!, args, { cwd: root, reject: false, env: { NO_COLOR: "1" } });
}
const run = (args: string[]) => withoutNode([EXECUTABLE, ...args]);

before(async () => {
  await ensureExecutable();
  swappiness = Number((await execa("cat", ["/proc/sys/vm/swappiness"])).stdout);
  root = await writeTree(
    {
      "fleet-manifests/fleet.yaml": "policy:\n  sysctl: { severity: medium }\n",
      "fleet-manifests/nodes/localhost.yaml": `system:\n  sysctl_parameters:\n    vm.swappiness: ${swappiness}\n`,
      "fleet-manifests/nodes/drifted.yaml": `host: localhost\nsystem:\n  sysctl_parameters:\n    vm.swappiness: ${swappiness + 1}\n`,
      "etc/app.conf": "port = 1\n",
    },
    "qm-exe-",
  );
  // Every command of /usr/bin and /usr/sbin but Node's.
  const bin = path.join(root, "bin");
  await mkdir(bin);
  for (const dir of ["/usr/sbin", "/usr/bin"])
    for (const name of await readdir(dir))
      if (!NODE_NAMES.has(name))
        await symlink(path.join(dir, name), path.join(bin, name)).catch(
          (error: NodeJS.ErrnoException) => {
            if (error.code !== "EEXIST") throw error;
          },
        );
  const hidden = ["/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node"];
  noNode = [
    "unshare",
    "--mount",
    "--propagation",
    "private",
    "sh",
    "-c",
    `for f in ${hidden.join(" ")}; do [ ! -e "$f" ] || mount --bind /dev/null "$f"; done; PATH=${bin} exec "$@"`,
    "sh",
  ];
});

after(async () => {
  if (root) await removeTree(root);
});

describe("the single executable, on a host without Node", () => {
  it("has no node to run", async () => {
    const probe = await withoutNode(["sh", "-c", "command -v node; /usr/bin/node --version"]);
    assert.equal(probe.stdout, "");
    assert.notEqual(probe.exitCode, 0);
  });

  it("prints its version", async () => {
    const result = await run(["--version"]);
    assert.match(result.stdout, /^quartermaster \d+\.\d+\.\d+/);
    assert.equal(result.stderr, "");
  });

  it("audits this machine with --local: clean, then drift", async () => {
    const clean = await run(["audit", "--local", "--nodes", "localhost"]);
    assert.equal(clean.exitCode, 0, clean.stderr);
    const drifted = await run(["audit", "--local", "--nodes", "drifted", "--format", "json"]);
    assert.equal(drifted.exitCode, 1, drifted.stderr);
    const [node] = JSON.parse(drifted.stdout).nodes;
    assert.deepEqual(
      node.drift.map((d: { key: string; declared: unknown; live: unknown }) => [
        d.key,
        d.declared,
        d.live,
      ]),
      [["vm.swappiness", String(swappiness + 1), String(swappiness)]],
    );
  });

  it("snapshots this machine with --local", async () => {
    const result = await run(["snapshot", "--local", "--packages", "none"]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stdout, /^# yaml-language-server: \$schema=/);
    const kernel = (await execa("uname", ["-r"])).stdout;
    assert.match(
      result.stdout,
      new RegExp(`^  kernel_version: ${kernel.replaceAll(".", "\\.")}$`, "m"),
    );
  });

  it("watches a declared file: drift when it changes, a clean stop on SIGTERM", async () => {
    const file = path.join(root, "etc/app.conf");
    const spec = path.join(root, "node-spec.yaml");
    await writeFile(spec, `files:\n  - { path: ${file}, contents: "port = 1\\n" }\n`);
    const watcher = Watcher.start(["--manifest", spec, "--interval", "3600"], noNode, [EXECUTABLE]);
    try {
      await watcher.waitFor("the started event", (e) => e.event === "started");
      await writeFile(file, "port = 2\n");
      await watcher.waitFor("a drift event", (e) => e.event === "drift");
    } finally {
      const exit = await watcher.stop();
      assert.equal(exit.code, 0, watcher.stderr);
    }
  });
});
