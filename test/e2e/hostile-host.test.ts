// A hostile host over real ssh: a declared file whose live contents hold terminal escapes, a bell,
// CR, NUL, a bidi override and a workflow command; a package database with the same. Whatever the
// host sends, `diff`, `audit` (text, events) and `snapshot` print none of it raw. Needs root.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import { runCli, type CliResult } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { pyyamlLoad } from "../support/pyyaml.js";
import { removeTree, writeTree } from "../support/tree.js";

const MOTD = "/etc/qm-hostile/motd";
const HOSTILE = [
  "welcome\n",
  "\x1b]0;retitled by the host\x07\x1b[2J cleared\n",
  "carriage\rreturn overwrites\n",
  "nul\0byte\n",
  "bidi \u202eevil\u202c text\n",
  "::error::forged annotation\n",
  "\u2028line separator\n",
].join("");

// One more package in the host's dpkg database, versioned with the same kind of bytes (a CR would
// make the status line malformed: the node is then an error, not a snapshot).
const addHostilePackage = (status: string) =>
  `${status.trimEnd()}\n\nPackage: qm-evil\nStatus: install ok installed\nVersion: 1:2.3\u202e\x1b[2J\x07\n`;

/** Raw characters no terminal or log should receive from a host. */
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]/u;

function assertClean(result: CliResult, what: string): void {
  for (const [stream, text] of [
    ["stdout", result.stdout],
    ["stderr", result.stderr],
  ] as const) {
    const raw = RAW.exec(text);
    assert.equal(
      raw,
      null,
      `${what} ${stream} holds U+${raw?.[0].codePointAt(0)!.toString(16).padStart(4, "0")} raw:\n${JSON.stringify(text)}`,
    );
    assert.doesNotMatch(
      text,
      /^\s*::/m,
      `${what} ${stream} holds a line a runner reads as a workflow command`,
    );
  }
  assert.doesNotMatch(result.stderr, /^\s+at /m, `${what}: a stack trace reached the user`);
}

describe("a hostile host's bytes on the terminal", () => {
  let fleet: TestFleet;
  let manifests: string;
  const cli = (args: string[]) =>
    runCli([...args, "--manifests", manifests, "--ssh-config", fleet.sshConfig]);

  before(async () => {
    fleet = await startFleet([
      {
        name: "hostile-01",
        files: { [MOTD]: { contents: HOSTILE, mode: "0644" } },
        dpkgStatus: addHostilePackage,
      },
    ]);
    manifests = await writeTree({
      "nodes/hostile-01.yaml": `files:\n  - { path: ${MOTD}, contents: "welcome\\n" }\npackages:\n  installed_manifest: { qm-evil: "1:2.3" }\n`,
    });
  });
  after(async () => {
    await fleet?.stop();
    if (manifests) await removeTree(manifests);
  });

  test("diff --category files shows the drift headed by the file's path, every host byte escaped", async () => {
    const result = await cli(["diff", "--category", "files", "--verbose"]);
    assert.equal(result.exitCode, 1, result.stderr);
    assertClean(result, "diff");
    const lines = result.stdout.split("\n");
    assert.ok(
      lines.includes(`--- ${MOTD} (declared)`) && lines.includes(`+++ ${MOTD} (live)`),
      result.stdout,
    );
    assert.ok(lines.includes("+\\x1b]0;retitled by the host\\x07\\x1b[2J cleared"), result.stdout);
    assert.ok(lines.includes("+carriage\\rreturn overwrites"), result.stdout);
    assert.ok(lines.includes("+nul\\x00byte"), result.stdout);
    assert.ok(lines.includes("+bidi \\u{202e}evil\\u{202c} text"), result.stdout);
    assert.ok(lines.includes("+::error::forged annotation"), result.stdout);
  });

  test("audit --format text and --format events hold no raw host bytes either", async () => {
    for (const format of ["text", "events"]) {
      const result = await cli(["audit", "--format", format, "--verbose"]);
      assert.equal(result.exitCode, 1, result.stdout + result.stderr);
      assertClean(result, `audit --format ${format}`);
      if (format === "text")
        assert.match(
          result.stdout,
          new RegExp(`^ +--- ${MOTD} \\(declared\\)$`, "m"),
          result.stdout,
        );
    }
  });

  test("snapshot writes YAML that the yaml library and PyYAML read the same, with no raw control characters", async () => {
    const result = await cli([
      "snapshot",
      "--node",
      "hostile-01",
      "--category",
      "packages",
      "--packages",
      "versions",
    ]);
    assert.equal(result.exitCode, 0, result.stdout + result.stderr);
    assertClean(result, "snapshot");
    const spec = parse(result.stdout) as {
      packages: { installed_manifest: Record<string, string> };
    };
    assert.deepEqual(Object.keys(spec), ["packages"], "no key was smuggled in");
    assert.match(
      spec.packages.installed_manifest["qm-evil"]!,
      /^1:2\.3[^\n]+$/,
      "the hostile version is in the snapshot, as a string",
    );
    const [py] = await pyyamlLoad([result.stdout]);
    assert.ok(
      py && "value" in py,
      `PyYAML refused the snapshot: ${py && "error" in py ? py.error : ""}`,
    );
    assert.equal(JSON.stringify(py.value), JSON.stringify(spec));
  });

  // Last: it leaves the host without a null device.
  test("a host whose /dev/null is a regular file is an error saying so, never an audit with facts missing", async () => {
    await fleet.exec(
      "hostile-01",
      'f=$(mktemp) && printf \'kept by a careless script\\n\' > "$f" && mount --bind "$f" /dev/null && rm "$f"',
    );
    const result = await cli(["audit", "--format", "json"]);
    assert.equal(result.exitCode, 4, result.stderr);
    assertClean(result, "audit");
    const report = JSON.parse(result.stdout) as {
      nodes: { name: string; status: string; error?: string }[];
    };
    const node = report.nodes.find((n) => n.name === "hostile-01")!;
    assert.equal(node.status, "error");
    assert.match(
      node.error ?? "",
      /^probe output probe: \/dev\/null on this host is not the null device .* Restore it as root: rm -f \/dev\/null && mknod -m 666 \/dev\/null c 1 3; node not audited$/,
    );
  });
});
