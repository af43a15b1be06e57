import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { useColor } from "../../src/cli/options.js";
import { runCli } from "../support/cli.js";
import { removeTree, writeTree } from "../support/tree.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));
const tree = async (files: Record<string, string>) => {
  const dir = await writeTree(files);
  dirs.push(dir);
  return dir;
};

describe("the CLI on bad input: exit 2 and a message naming the place", () => {
  it("validate lists every manifest error as file:line:col and exits 2", async () => {
    const dir = await tree({
      "nodes/web-01.yaml": "system:\n  sysctl_paramters: {}\nfiles:\n  - { path: etc/motd, contents: hi }\n  - { path: /etc/../shadow, mode: \"0600\" }\n",
    });
    const result = await runCli(["validate", "--manifests", dir], { cwd: dir });
    assert.equal(result.exitCode, 2);
    const lines = result.stderr.trim().split("\n");
    assert.match(lines[0]!, /^nodes\/web-01\.yaml:2:3: unknown key "sysctl_paramters" in system \(did you mean "sysctl_parameters"\?\)$/);
    assert.ok(lines.some((l) => /^nodes\/web-01\.yaml:4:\d+: files\.0\.path: .*absolute/.test(l)), result.stderr);
    assert.ok(lines.some((l) => /^nodes\/web-01\.yaml:5:\d+: files\.1\.path: .*\.\./.test(l)), result.stderr);
    assert.match(lines.at(-1)!, /^3 manifest errors; nothing audited$/);
  });

  it("under GitHub Actions, validate also prints error annotations at file and line", async () => {
    const dir = await tree({ "nodes/a.yaml": "groups: [nope]\n" });
    const result = await runCli(["validate", "--manifests", dir], { cwd: dir, env: { GITHUB_ACTIONS: "true" } });
    assert.equal(result.exitCode, 2);
    assert.equal(result.stdout.trim(), '::error file=nodes/a.yaml,line=1,col=10::unknown group "nope" (no groups/nope.yaml)');
  });

  it("audit does not run on a broken manifest", async () => {
    const dir = await tree({ "nodes/localhost.yaml": "system: [\n" });
    const result = await runCli(["audit", "--local", "--manifests", dir, "--format", "json"], { cwd: dir });
    assert.equal(result.exitCode, 2);
    assert.equal(result.stdout, "");
    assert.match(result.stderr, /^nodes\/localhost\.yaml:\d+:\d+: invalid YAML/);
  });

  it("usage errors: unknown command, flag, category, format, and no node for --local", async () => {
    const dir = await tree({ "nodes/web-01.yaml": "{}\n" });
    const cases: [string[], RegExp][] = [
      [["frobnicate"], /unknown command "frobnicate"/],
      [["audit", "--frobnicate"], /audit: unknown option --frobnicate\n/],
      [["audit", "--local", "--manifests", dir, "--category", "sysctls"], /unknown category "sysctls" \(did you mean "sysctl"\?\)/],
      [["audit", "--local", "--manifests", dir, "--format", "yaml"], /unknown --format "yaml"/],
      [["audit", "--local", "--manifests", dir], /--local: no node in .* is named ".*" or has host ".*", and there is no "localhost" node/],
      [["audit", "--manifests", dir, "--nodes", "web-1"], /--nodes: no node matches "web-1" \(did you mean "web-01"\?\)/],
      [["audit", "--manifests", dir, "--shard", "4/3"], /--shard takes k\/n with 1 <= k <= n, not "4\/3"/],
      [["audit", "--manifests", "/nonexistent-manifests"], /manifest directory not found/],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args);
      assert.equal(result.exitCode, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.match(result.stderr, message, args.join(" "));
    }
  });
});

describe("colors", () => {
  const tty = { isTTY: true } as NodeJS.WriteStream;
  it("only on a TTY, never with NO_COLOR or --no-color", () => {
    const saved = process.env.NO_COLOR;
    delete process.env.NO_COLOR;
    try {
      assert.equal(useColor({}, tty), true);
      assert.equal(useColor({}, { isTTY: false } as NodeJS.WriteStream), false);
      assert.equal(useColor({ "no-color": true }, tty), false);
      process.env.NO_COLOR = "1";
      assert.equal(useColor({}, tty), false);
    } finally {
      if (saved === undefined) delete process.env.NO_COLOR;
      else process.env.NO_COLOR = saved;
    }
  });
});
