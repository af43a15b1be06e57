// `__proto__` and `constructor` are keys like any other in a manifest's maps (a sysctl, a device
// glob, a package): validated, merged, audited and reported as data, never dropped.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();

const GROUP = 'system:\n  sysctl_parameters:\n    __proto__: "1"\n';
const NODE = [
  "groups: [base]",
  "system:",
  "  sysctl_parameters:",
  '    constructor: "2"',
  "storage:",
  "  io_scheduler:",
  "    __proto__: mq-deadline",
  "packages:",
  "  installed_manifest:",
  '    __proto__: "*"',
  '    constructor: "*"',
  "",
].join("\n");

describe("__proto__ and constructor keys in a manifest's maps", () => {
  it("validate checks them like any key: valid ones pass, a bad value is named at its line", async () => {
    const good = await tree({ "groups/base.yaml": GROUP, "nodes/localhost.yaml": NODE });
    const valid = await runCli(["validate", "--manifests", good], { cwd: good });
    assert.equal(valid.exitCode, 0, valid.stderr);
    assert.match(valid.stdout, /valid \(1 node, 1 group in use\)/);

    const bad = await tree({
      "groups/base.yaml": "system:\n  sysctl_parameters:\n    __proto__: [1]\n",
      "nodes/localhost.yaml": NODE.replace(
        "__proto__: mq-deadline",
        "__proto__: mq deadline",
      ).replace('__proto__: "*"', "__proto__: latest"),
    });
    const result = await runCli(["validate", "--manifests", bad], { cwd: bad });
    assert.equal(result.exitCode, 2, result.stderr);
    const lines = result.stderr.trim().split("\n");
    assert.ok(
      lines.some((l) =>
        /^groups\/base\.yaml:3:\d+: system\.sysctl_parameters\.__proto__: /.test(l),
      ),
      result.stderr,
    );
    assert.ok(
      lines.some((l) =>
        /^nodes\/localhost\.yaml:7:\d+: storage\.io_scheduler\.__proto__: a scheduler name/.test(l),
      ),
      result.stderr,
    );
    assert.ok(
      lines.some((l) =>
        /^nodes\/localhost\.yaml:10:\d+: packages\.installed_manifest\.__proto__: "latest" is a package state/.test(
          l,
        ),
      ),
      result.stderr,
    );
    assert.equal(lines.at(-1), "3 manifest errors; nothing audited");
  });

  it("an audit checks them and reports each at the file and line declaring it", async () => {
    const dir = await tree({ "groups/base.yaml": GROUP, "nodes/localhost.yaml": NODE });
    const result = await runCli(["audit", "--local", "--manifests", dir, "--format", "json"], {
      cwd: dir,
    });
    assert.equal(result.exitCode, 1, result.stderr);
    const [node] = (JSON.parse(result.stdout) as Report).nodes;
    const found = (domain: string, key: string) =>
      node!.drift.find((d) => d.domain === domain && d.key === key);
    // No host has a sysctl by these names: each is drift, at its own layer's line.
    assert.deepEqual(
      [found("sysctl", "__proto__"), found("sysctl", "constructor")].map((d) => [
        d?.declared,
        d?.live,
        d?.source,
      ]),
      [
        ["1", null, { file: "groups/base.yaml", line: 3 }],
        ["2", null, { file: "nodes/localhost.yaml", line: 4 }],
      ],
    );
    // A host that cannot show a domain says so; one that can shows no device or package by the name.
    const shown = (domain: string) => !node!.unknown?.some((u) => u.domain === domain);
    if (shown("io_scheduler"))
      assert.deepEqual(found("io_scheduler", "__proto__")?.source, {
        file: "nodes/localhost.yaml",
        line: 7,
      });
    if (shown("packages"))
      for (const [key, line] of [
        ["__proto__", 10],
        ["constructor", 11],
      ] as const)
        assert.deepEqual(
          [found("packages", key)?.live, found("packages", key)?.source],
          ["absent", { file: "nodes/localhost.yaml", line }],
        );
  });
});
