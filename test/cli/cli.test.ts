import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import type { Report } from "../../src/report/schema.js";
import { BUILT_ENTRY, ensureBuilt, REPO_ROOT, runCli, spawnCli } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();

describe("the CLI on bad input: exit 2 and a message naming the place", () => {
  it("validate lists every manifest error as file:line:col and exits 2", async () => {
    const dir = await tree({
      "nodes/web-01.yaml":
        'system:\n  sysctl_paramters: {}\nfiles:\n  - { path: etc/motd, contents: hi }\n  - { path: /etc/../shadow, mode: "0600" }\n',
    });
    const result = await runCli(["validate", "--manifests", dir], { cwd: dir });
    assert.equal(result.exitCode, 2);
    const lines = result.stderr.trim().split("\n");
    assert.match(
      lines[0]!,
      /^nodes\/web-01\.yaml:2:3: unknown key "sysctl_paramters" in system \(did you mean "sysctl_parameters"\?\)$/,
    );
    assert.ok(
      lines.some((l) => /^nodes\/web-01\.yaml:4:\d+: files\.0\.path: .*absolute/.test(l)),
      result.stderr,
    );
    assert.ok(
      lines.some((l) => /^nodes\/web-01\.yaml:5:\d+: files\.1\.path: .*\.\./.test(l)),
      result.stderr,
    );
    assert.match(lines.at(-1)!, /^3 manifest errors; nothing audited$/);
  });

  it("under GitHub Actions, validate also prints error annotations at file and line", async () => {
    const dir = await tree({ "nodes/a.yaml": "groups: [nope]\n" });
    const result = await runCli(["validate", "--manifests", dir], {
      cwd: dir,
      env: { GITHUB_ACTIONS: "true" },
    });
    assert.equal(result.exitCode, 2);
    assert.equal(
      result.stdout.trim(),
      '::error file=nodes/a.yaml,line=1,col=10::unknown group "nope" (no groups/nope.yaml)',
    );
  });

  it("a package declared by its state, as Ansible writes it, is refused at its line", async () => {
    const dir = await tree({
      "nodes/a.yaml": "packages:\n  installed_manifest:\n    bash: latest\n    telnetd: removed\n",
    });
    const result = await runCli(["validate", "--manifests", dir]);
    assert.equal(result.exitCode, 2, result.stderr);
    assert.match(
      result.stderr,
      /nodes\/a\.yaml:3:11: packages\.installed_manifest\.bash: "latest" is a package state, not a version: declare "\*" for any installed version/,
    );
    assert.match(
      result.stderr,
      /nodes\/a\.yaml:4:14: .*"removed" is a package state, not a version: declare "absent"/,
    );
  });

  it("a tree declaring no node is valid, with a warning that an audit would check nothing", async () => {
    const dir = await tree({ "fleet.yaml": "{}\n", "nodes/README.md": "one file per node\n" });
    const result = await runCli(["validate", "--manifests", dir]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stdout, /: valid \(0 nodes, 0 groups in use\)/);
    assert.match(
      result.stderr,
      /^quartermaster: warning: .*\/nodes\/ declares no node, so an audit checks nothing$/,
    );
  });

  it("audit does not run on a broken manifest", async () => {
    const dir = await tree({ "nodes/localhost.yaml": "system: [\n" });
    const result = await runCli(["audit", "--local", "--manifests", dir, "--format", "json"], {
      cwd: dir,
    });
    assert.equal(result.exitCode, 2);
    assert.equal(result.stdout, "");
    assert.match(result.stderr, /^nodes\/localhost\.yaml:\d+:\d+: invalid YAML/);
  });

  it("a key repeated in a map is an error at the repeat, in a file of 40,000 keys too", async () => {
    const many = Array.from({ length: 40_000 }, (_, i) => `    p${i}: "*"\n`).join("");
    const dir = await tree({
      "nodes/web-01.yaml": `packages:\n  installed_manifest:\n    a: "*"\n    b: "*"\n    a: "1"\n`,
      "nodes/web-02.yaml": `packages:\n  installed_manifest:\n${many}    p7: "1"\n`,
    });
    const result = await runCli(["validate", "--manifests", dir], { cwd: dir });
    assert.equal(result.exitCode, 2);
    assert.deepEqual(result.stderr.trim().split("\n"), [
      "nodes/web-01.yaml:5:5: invalid YAML: Map keys must be unique",
      "nodes/web-02.yaml:40003:5: invalid YAML: Map keys must be unique",
      "2 manifest errors; nothing audited",
    ]);
  });

  it("usage errors: unknown command, flag, category, format, and no node for --local", async () => {
    const dir = await tree({ "nodes/web-01.yaml": "{}\n" });
    const report = path.join(REPO_ROOT, "test/fixtures/reports/fleet.json");
    const cases: [string[], RegExp][] = [
      [["frobnicate"], /unknown command "frobnicate"/],
      [["audit", "--frobnicate"], /audit: unknown option --frobnicate\n/],
      [
        ["audit", "--local", "--manifests", dir, "--category", "sysctls"],
        /unknown category "sysctls" \(did you mean "sysctl"\?\)/,
      ],
      [["audit", "--local", "--manifests", dir, "--format", "yaml"], /unknown --format "yaml"/],
      [
        ["audit", "--manifests", dir, "--nodes", "web-["],
        /--nodes: bad pattern "web-\[": the \[ at character 5 is never closed/,
      ],
      [
        ["audit", "--manifests", dir, "--nodes", "[z-a]*"],
        /--nodes: bad pattern "\[z-a\]\*": the range z-a at character 2 is backwards/,
      ],
      [
        ["audit", "--local", "--manifests", dir],
        /--local: no node in .* is named ".*" or has host ".*", and there is no "localhost" node/,
      ],
      [
        ["audit", "--manifests", dir, "--nodes", "web-1"],
        /--nodes: no node matches "web-1" \(did you mean "web-01"\?\)/,
      ],
      [
        ["audit", "--manifests", dir, "--shard", "4/3"],
        /--shard takes k\/n with 1 <= k <= n <= 256, not "4\/3"/,
      ],
      [["audit", "--manifests", "/nonexistent-manifests"], /manifest directory not found/],
      [
        ["audit", "--manifests", dir, "--concurrency", "1e3"],
        /--concurrency takes a whole number of at least 1, not "1e3"/,
      ],
      [
        ["audit", "--manifests", dir, "--timeout", "0x10"],
        /--timeout takes a whole number of at least 1, not "0x10"/,
      ],
      [
        ["validate", "--manifests", path.join(dir, "nodes/web-01.yaml")],
        /web-01\.yaml is a file: --manifests takes the manifest tree, the folder holding fleet\.yaml and nodes\//,
      ],
      [
        ["snapshot", "--manifests", dir, "--node", "web-1"],
        /--node: no node matches "web-1" \(did you mean "web-01"\?\)/,
      ],
      [
        ["snapshot", "--manifests", dir, "--node", "db-09"],
        /--node: no node matches "db-09" \(the nodes: web-01\)/,
      ],
      [["adopt", "--manifests", dir], /adopt needs --inventory PATH/],
      [["adopt", "--inventory", "/nonexistent-inventory"], /--inventory: no such file or folder/],
      [
        ["adopt", "--inventory", path.join(dir, "nodes/web-01.yaml"), "--packages", "every"],
        /--packages takes chosen, all, names, versions or none, not "every"/,
      ],
      [
        ["adopt", "--inventory", path.join(dir, "nodes/web-01.yaml"), "--files", "/etc/a,etc/x"],
        /--files: "etc\/x": must be an absolute path/,
      ],
      [
        ["adopt", "--inventory", path.join(dir, "nodes/web-01.yaml"), "--units", "nginx"],
        /--units: "nginx": a unit name ending in \.service/,
      ],
      [
        ["adopt", "--inventory", path.join(dir, "nodes/web-01.yaml"), "--concurrency", "0"],
        /--concurrency takes a whole number of at least 1, not "0"/,
      ],
      [
        ["report", "--report", report, "--format", "markdown", "--max-bytes", "100"],
        /--max-bytes: maxBytes 100 is too small even for the audit summary/,
      ],
      [
        ["manifest-diff", "--base", "HEAD", "--max-bytes", "50"],
        /--max-bytes takes at least 1024, not 50/,
      ],
      [["diff", "--category", "files", "--format", "json"], /diff: unknown option --format/],
      [
        ["diff", "--category", "files", "--manifests", dir, "--node", "web-01", "--nodes", "web-*"],
        /diff takes --node NAME or --nodes LIST, not both/,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args);
      assert.equal(result.exitCode, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.match(result.stderr, message, args.join(" "));
      assert.doesNotMatch(result.stderr, /internal error|\n {4}at /, args.join(" "));
      // A mistake in a command's flags shows that command's usage, not the list of every command.
      if (args[0] !== "frobnicate" && !/manifest error/.test(result.stderr)) {
        assert.match(
          result.stderr,
          new RegExp(`\nusage: quartermaster ${args[0]} `),
          args.join(" "),
        );
        assert.doesNotMatch(result.stderr, /merge-reports {3}/, args.join(" "));
      }
    }
  });

  // A FIFO read would wait for a writer forever: the timeout makes that a failure, not a hang.
  it(
    "a report file that cannot be used is named, with exit 2, and is not called a manifest error",
    {
      timeout: 120_000,
    },
    async () => {
      const fixture = path.join(REPO_ROOT, "test/fixtures/reports/fleet.json");
      const good = JSON.parse(await readFile(fixture, "utf8")) as Report;
      const changed = (change: (r: Report) => unknown) => {
        const copy = structuredClone(good);
        change(copy);
        return `${JSON.stringify(copy)}\n`;
      };
      // Written as text: building it as a value would overflow this test's own stack.
      const nested = `${"[".repeat(5000)}"x"${"]".repeat(5000)}`;
      const dir = await tree({
        "not-json.json": "{ not json\n",
        "folder.json/a": "",
        "twice.json": changed((r) => r.nodes.push(r.nodes[0]!)),
        "summary.json": changed((r) => (r.summary.nodes = -7)),
        "nested.json": changed(
          (r) => (r.nodes.find((n) => n.drift.length)!.drift[0]!.live = "NESTED"),
        ).replace('"NESTED"', nested),
        "started.json": changed((r) => (r.startedAt = "2026 --> @octocat")),
        "shard.json": changed((r) => (r.shard = { index: 3, count: 2 })),
      });
      await execa("mkfifo", [path.join(dir, "fifo.json")]);
      const cases: [string, RegExp][] = [
        ["missing.json", /missing\.json: cannot read the report: ENOENT/],
        ["not-json.json", /not-json\.json: not a JSON report \(write it with --format json\)/],
        ["fifo.json", /fifo\.json: is not a regular file \(a FIFO, socket or device\); not read/],
        ["folder.json", /folder\.json: is a folder, not a report/],
        ["twice.json", /twice\.json: nodes\.9: node "[^"]+" is in the report twice/],
        ["summary.json", /summary\.json: summary: does not count the report's nodes/],
        ["nested.json", /nested\.json: not a Quartermaster report: nested too deeply to read/],
        [
          "started.json",
          /started\.json: not a Quartermaster report \(schemaVersion 1\): startedAt: /,
        ],
        ["shard.json", /shard\.json: .*shard: shard index past the shard count/],
      ];
      for (const [name, message] of cases) {
        const result = await runCli(["report", "--report", path.join(dir, name)]);
        assert.equal(result.exitCode, 2, `${name}: ${result.stderr}`);
        assert.match(result.stderr, message, name);
        assert.doesNotMatch(result.stderr, /manifest error|nothing audited|internal error/, name);
      }
    },
  );

  it("review refuses an event that is no issue comment GitHub could send, naming the field", async () => {
    const event = (issue: unknown, login: unknown) =>
      `${JSON.stringify({ issue, comment: { body: "/quartermaster reject", user: { login } } })}\n`;
    const dir = await tree({
      "negative.json": event({ number: -7, pull_request: {} }, "octocat"),
      "login.json": event({ number: 7, pull_request: {} }, ""),
      "null-pr.json": event({ number: 7, pull_request: null }, "octocat"),
      "list.json": "[]\n",
    });
    for (const [name, field] of [
      ["negative.json", "issue.number"],
      ["login.json", "comment.user.login"],
      ["null-pr.json", "issue.pull_request"],
      ["list.json", "the event"],
    ]) {
      const result = await runCli(["review", "--event", path.join(dir, name!)]);
      assert.equal(result.exitCode, 2, `${name}: ${result.stderr}`);
      assert.match(result.stderr, new RegExp(`is not an issue_comment event: ${field}: `), name);
    }
    // A setting the workflow did not give is its mistake too: exit 2, not a failed action.
    const valid = path.join(dir, "valid.json");
    await writeFile(valid, event({ number: 7, pull_request: {} }, "octocat"));
    const unset = await runCli(["review", "--event", valid], { env: { GITHUB_REPOSITORY: "" } });
    assert.equal(unset.exitCode, 2, unset.stderr);
    assert.match(unset.stderr, /GITHUB_REPOSITORY must be set to owner\/repo/);
  });

  it("output to a reader that went away ends quietly, with the audit's own exit code", async () => {
    const dir = await tree({
      "nodes/localhost.yaml": "system:\n  kernel_version: 0.0.0-declared\n",
    });
    await ensureBuilt();
    // `true` exits without reading: every write meets a closed pipe.
    const result = await execa(
      "bash",
      [
        "-c",
        'node "$1" audit --local --manifests "$2" --format json | true; exit "${PIPESTATUS[0]}"',
        "sh",
        BUILT_ENTRY,
        dir,
      ],
      { reject: false },
    );
    assert.equal(result.exitCode, 1, result.stderr);
    assert.equal(result.stderr, "");
  });
});

describe("colours follow the conventions, under a real pseudo-terminal and through a pipe", () => {
  const REPORT = path.join(REPO_ROOT, "test/fixtures/reports/fleet.json");
  /** `report` of a fixture in text form; through `script` it runs on a pseudo-terminal. */
  const render = async (
    env: Record<string, string>,
    options: { tty: boolean; flags?: string[] },
  ) => {
    await ensureBuilt();
    const command = [
      process.execPath,
      BUILT_ENTRY,
      "report",
      "--report",
      REPORT,
      ...(options.flags ?? []),
    ];
    const base = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/",
      TERM: "xterm-256color",
      ...env,
    };
    const result = options.tty
      ? await execa("script", ["-qec", command.map((a) => `'${a}'`).join(" "), "/dev/null"], {
          env: base,
          extendEnv: false,
          reject: false,
        })
      : await execa(command[0]!, command.slice(1), { env: base, extendEnv: false, reject: false });
    assert.match(result.stdout, /drift/, result.stderr);
    return result.stdout.includes("\x1b[");
  };

  it("on a terminal: coloured, except with NO_COLOR, FORCE_COLOR=0, TERM=dumb or --no-color", async () => {
    assert.equal(await render({}, { tty: true }), true);
    assert.equal(await render({ NO_COLOR: "1" }, { tty: true }), false);
    assert.equal(await render({ FORCE_COLOR: "0" }, { tty: true }), false);
    assert.equal(await render({ TERM: "dumb" }, { tty: true }), false);
    assert.equal(await render({}, { tty: true, flags: ["--no-color"] }), false);
  });

  it("through a pipe: plain, except with FORCE_COLOR=1 or --color (CI logs)", async () => {
    assert.equal(await render({}, { tty: false }), false);
    assert.equal(await render({ FORCE_COLOR: "1" }, { tty: false }), true);
    assert.equal(await render({}, { tty: false, flags: ["--color"] }), true);
    assert.equal(
      await render({ NO_COLOR: "1" }, { tty: false, flags: ["--color"] }),
      true,
      "a flag outranks the environment",
    );
  });

  it("an empty NO_COLOR is unset, as no-color.org says", async () => {
    assert.equal(await render({ NO_COLOR: "" }, { tty: true }), true);
  });
});

describe("finding the manifest tree", () => {
  it("from inside the tree, from a folder in it, and from a subfolder of the repository", async () => {
    const repo = await tree({
      "fleet-manifests/fleet.yaml": "{}\n",
      "fleet-manifests/nodes/web-01.yaml": "{}\n",
      "docs/README.md": "x\n",
    });
    for (const [cwd, shown] of [
      ["fleet-manifests", "."],
      ["fleet-manifests/nodes", ".."],
      ["docs", "../fleet-manifests"],
      [".", "fleet-manifests"],
    ] as const) {
      const result = await runCli(["validate"], { cwd: path.join(repo, cwd) });
      assert.equal(result.exitCode, 0, `${cwd}: ${result.stderr}`);
      assert.equal(result.stdout, `${shown}: valid (1 node, 0 groups in use)`, cwd);
    }
  });

  it("a tree without nodes/ is an error that names the right folder", async () => {
    const misspelt = await tree({ "fleet.yaml": "{}\n", "node/web-01.yaml": "{}\n" });
    const result = await runCli(["validate", "--manifests", misspelt]);
    assert.equal(result.exitCode, 2);
    assert.match(result.stderr, /has no nodes\/ folder; is node\/ meant to be nodes\/\?/);
    const above = await tree({ "fleet-manifests/nodes/a.yaml": "{}\n", "README.md": "x\n" });
    const wrong = await runCli(["validate", "--manifests", above]);
    assert.equal(wrong.exitCode, 2);
    assert.match(
      wrong.stderr,
      /has no nodes\/ folder; .*fleet-manifests holds one: use --manifests .*fleet-manifests\n/,
    );
  });
});

describe("propose from a report older than the manifests", () => {
  it("leaves out drift in a domain the manifests no longer declare, and plans the rest", async () => {
    // The report says web-01's io_scheduler drifted; the sample manifests declare none for it.
    const report = path.join(REPO_ROOT, "test/fixtures/reports/fleet.json");
    // A process of its own: in this one, git finds no checkout around the sample manifests.
    const result = await spawnCli([
      "propose",
      "--dry-run",
      "--report",
      report,
      "--manifests",
      path.join(REPO_ROOT, "fleet-manifests"),
    ]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.doesNotMatch(result.stderr, /internal error/);
    assert.doesNotMatch(result.stdout, /io_scheduler|io-scheduler/);
    assert.match(
      result.stdout,
      /would open {3}accept  quartermaster--accept--sysctl--vm-swappiness--/,
    );
  });
});
