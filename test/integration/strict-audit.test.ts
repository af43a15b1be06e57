// What `audit --local` shows and exits with when the audit user cannot read a declared file, or the
// node is in maintenance.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmod, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { stringify } from "yaml";
import { BUILT_ENTRY, ensureBuilt, runCli } from "../support/cli.js";
import { asNobody } from "../support/local-node.js";
import { removeTree, writeTree } from "../support/tree.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

/** The real CLI as user nobody, with the environment a cron job would give it. */
async function cliAsNobody(args: string[]) {
  await ensureBuilt();
  const result = await execa(
    "setpriv",
    asNobody("HOME=/tmp", "NO_COLOR=1", process.execPath, BUILT_ENTRY, ...args),
    { cwd: "/", reject: false },
  );
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}

describe("audit --local as a user who cannot read a declared file", () => {
  it("reports the file unknown and counts it: exit 0, and 4 with --strict", async () => {
    const secret = "root only\n";
    const dir = await writeTree({ "root-only.txt": secret, "readable.txt": "hello\n" });
    dirs.push(dir);
    const files = [
      {
        path: path.join(dir, "root-only.txt"),
        sha256: createHash("sha256").update(secret).digest("hex"),
        secret: true,
      },
      { path: path.join(dir, "readable.txt"), contents: "hello\n" },
    ];
    const manifests = path.join(dir, "m");
    await execa("mkdir", ["-p", path.join(manifests, "nodes")]);
    await writeFile(path.join(manifests, "nodes", "localhost.yaml"), stringify({ files }));
    await execa("chmod", ["-R", "a+rX", dir]);
    await chmod(path.join(dir, "root-only.txt"), 0o600);

    const plain = await cliAsNobody(["audit", "--local", "--manifests", manifests]);
    assert.equal(plain.exitCode, 0, plain.stderr);
    assert.match(plain.stdout, /^1 clean node: localhost \(1 item in 1 domain\)$/m);
    assert.match(plain.stdout, /^1 node: 1 clean, 1 item unknown \(files\)$/m);
    const verbose = await cliAsNobody(["audit", "--local", "--manifests", manifests, "--verbose"]);
    assert.match(verbose.stdout, /^localhost: clean \(1 item in 1 domain\), 1 unknown, /m);
    const unknown = verbose.stdout.split("\n").filter((l) => l.startsWith("  files: unknown ("));
    assert.equal(unknown.length, 1, verbose.stdout);
    assert.ok(
      unknown[0]!.includes(`${path.join(dir, "root-only.txt")}: Permission denied`),
      verbose.stdout,
    );

    const strict = await cliAsNobody(["audit", "--local", "--manifests", manifests, "--strict"]);
    assert.equal(strict.exitCode, 4, strict.stderr);
    assert.equal(strict.stdout, plain.stdout);
    // As root the same file is read: nothing unknown, so --strict exits 0.
    const root = await runCli(["audit", "--local", "--manifests", manifests, "--strict"]);
    assert.equal(root.exitCode, 0, root.stdout + root.stderr);
    assert.match(root.stdout, /^1 node: 1 clean$/m);
  });
});

describe("audit --local on a node in maintenance", () => {
  it("shows the marker's first line as the reason, escaped and capped; a symlinked marker's target is never read", async () => {
    const reason = `kernel upgrade by @alice \x1b[2J<!-- x -->${"z".repeat(1000)}\nsecond line\n`;
    const dir = await writeTree({ marker: reason, "secret.txt": "TOPSECRET\n" });
    dirs.push(dir);
    const marker = path.join(dir, "marker");
    const manifests = path.join(dir, "m");
    await execa("mkdir", ["-p", path.join(manifests, "nodes")]);
    await writeFile(
      path.join(manifests, "fleet.yaml"),
      stringify({ audit: { maintenance_marker: marker } }),
    );
    await writeFile(
      path.join(manifests, "nodes", "localhost.yaml"),
      stringify({ system: { kernel_version: "0.0.0-none" } }),
    );

    const text = await runCli(["audit", "--local", "--manifests", manifests]);
    assert.equal(text.exitCode, 0, text.stderr);
    const line = text.stdout.split("\n").find((l) => l.includes("maintenance marker"))!;
    assert.ok(
      line.startsWith(
        `  maintenance marker ${marker} is present: kernel upgrade by @alice \\x1b[2J<!-- x -->zzz`,
      ),
      line,
    );
    assert.ok(line.endsWith("z…") && line.length < 300, line);
    assert.ok(!text.stdout.includes("\x1b") && !text.stdout.includes("second line"));

    await execa("rm", [marker]);
    await symlink(path.join(dir, "secret.txt"), marker);
    const json = await runCli(["audit", "--local", "--manifests", manifests, "--format", "json"]);
    const node = JSON.parse(json.stdout).nodes[0];
    assert.deepEqual(
      [node.status, node.error],
      ["maintenance", `maintenance marker ${marker} is present`],
    );
    assert.ok(!json.stdout.includes("TOPSECRET"));
  });
});
