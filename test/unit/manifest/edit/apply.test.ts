import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { diffArrays } from "diff";
import { parse } from "yaml";
import { ManifestEditError } from "../../../../src/errors.js";
import { applyChanges } from "../../../../src/manifest/edit/apply.js";
import { declaredIn, type DeclaredChange } from "../../../../src/manifest/edit/changes.js";
import { specListShapes } from "../../../../src/manifest/lists.js";

const LISTS = specListShapes();

const sample = (file: string) =>
  readFileSync(new URL(`../../../../fleet-manifests/${file}`, import.meta.url), "utf8");

/** `text` with `from` (which must occur exactly once) replaced: how a reviewer's diff reads. */
function swap(text: string, from: string, to: string): string {
  assert.equal(text.split(from).length, 2, `expected exactly one ${JSON.stringify(from)}`);
  return text.replace(from, () => to);
}

/** The lines a line diff shows as removed and added; everything else is byte-identical. */
function lineChanges(before: string, after: string): { removed: string[]; added: string[] } {
  const parts = diffArrays(before.split("\n"), after.split("\n"));
  return {
    removed: parts.filter((p) => p.removed).flatMap((p) => p.value),
    added: parts.filter((p) => p.added).flatMap((p) => p.value),
  };
}

/** A deep copy of `value` with `update` applied: the values the edited file must read back as. */
function expectReads(value: unknown, update: (doc: any) => void): unknown {
  const copy = structuredClone(value);
  update(copy);
  return copy;
}

interface Case {
  changes: DeclaredChange[];
  expected: string;
  removed: string[];
  added: string[];
  reads: unknown;
}

function check(before: string, { changes, expected, removed, added, reads }: Case): void {
  const after = applyChanges(before, changes, LISTS);
  assert.equal(after, expected);
  assert.deepEqual(lineChanges(before, after), { removed, added });
  assert.deepEqual(parse(after), reads);
}

describe("applyChanges on the sample fleet", () => {
  it("changes a node override in place and keeps its comment in the same column", () => {
    const before = sample("nodes/web-02.yaml");
    const old = "    net.core.somaxconn: 8192     # a node override of the web group's value";
    const now = "    net.core.somaxconn: 65535    # a node override of the web group's value";
    check(before, {
      changes: [{ path: ["system", "sysctl_parameters", "net.core.somaxconn"], value: 65535 }],
      expected: swap(before, old, now),
      removed: [old],
      added: [now],
      reads: expectReads(
        parse(before),
        (d) => (d.system.sysctl_parameters["net.core.somaxconn"] = 65535),
      ),
    });
  });

  it("rewrites and appends items of a list-form sysctl map as `name = value`", () => {
    const before = sample("fleet.yaml");
    check(before, {
      changes: [
        { path: ["system", "sysctl_parameters", "net.ipv4.tcp_syncookies"], value: 0 },
        { path: ["system", "sysctl_parameters", "vm.swappiness"], value: 10 },
      ],
      expected: swap(
        before,
        "    - net.ipv4.tcp_syncookies = 1\n    - fs.protected_hardlinks = 1\n",
        "    - net.ipv4.tcp_syncookies = 0\n    - fs.protected_hardlinks = 1\n    - vm.swappiness = 10\n",
      ),
      removed: ["    - net.ipv4.tcp_syncookies = 1"],
      added: ["    - net.ipv4.tcp_syncookies = 0", "    - vm.swappiness = 10"],
      reads: expectReads(
        parse(before),
        (d) =>
          (d.system.sysctl_parameters = [
            "net.ipv4.tcp_syncookies = 0",
            "fs.protected_hardlinks = 1",
            "vm.swappiness = 10",
          ]),
      ),
    });
  });

  it("deletes one list-form item and leaves the comment above the list alone", () => {
    const before = sample("fleet.yaml");
    check(before, {
      changes: [{ path: ["system", "sysctl_parameters", "net.ipv4.tcp_syncookies"], delete: true }],
      expected: swap(before, "    - net.ipv4.tcp_syncookies = 1\n", ""),
      removed: ["    - net.ipv4.tcp_syncookies = 1"],
      added: [],
      reads: expectReads(
        parse(before),
        (d) => (d.system.sysctl_parameters = ["fs.protected_hardlinks = 1"]),
      ),
    });
  });

  it("adds a node-level override to a node file with no `system:`, creating the maps on the way", () => {
    const before = sample("nodes/db-01.yaml");
    check(before, {
      changes: [{ path: ["system", "sysctl_parameters", "net.core.somaxconn"], value: 1024 }],
      expected: before + "system:\n  sysctl_parameters:\n    net.core.somaxconn: 1024\n",
      removed: [],
      added: ["system:", "  sysctl_parameters:", "    net.core.somaxconn: 1024"],
      reads: {
        ...(parse(before) as object),
        system: { sysctl_parameters: { "net.core.somaxconn": 1024 } },
      },
    });
  });

  it("changes fields of keyed items: a quoted mode, a block `contents: |`, a flow-map unit", () => {
    const before = sample("groups/web.yaml");
    const contents =
      "server {\n  listen 127.0.0.1:8081;\n  location /nginx_status { stub_status; }\n}\n";
    check(before, {
      changes: [
        { path: ["files", "/etc/nginx/conf.d/status.conf", "mode"], value: "0600" },
        { path: ["files", "/etc/nginx/conf.d/status.conf", "contents"], value: contents },
        { path: ["systemd", "units", "nginx.service", "enabled"], value: false },
      ],
      expected: swap(
        swap(
          swap(before, '    mode: "0644"', '    mode: "0600"'),
          "        listen 127.0.0.1:8080;",
          "        listen 127.0.0.1:8081;",
        ),
        "    - { name: nginx.service, enabled: true, active: true }",
        "    - { name: nginx.service, enabled: false, active: true }",
      ),
      removed: [
        "        listen 127.0.0.1:8080;",
        '    mode: "0644"',
        "    - { name: nginx.service, enabled: true, active: true }",
      ],
      added: [
        "        listen 127.0.0.1:8081;",
        '    mode: "0600"',
        "    - { name: nginx.service, enabled: false, active: true }",
      ],
      reads: expectReads(parse(before), (d) => {
        d.files[0].mode = "0600";
        d.files[0].contents = contents;
        d.systemd.units[0].enabled = false;
      }),
    });
  });

  it("appends a new file item in the list's flow style, and adds and removes fields of a flow item", () => {
    const before = sample("nodes/localhost.yaml");
    check(before, {
      changes: [
        { path: ["files", "/etc/passwd", "owner"], delete: true },
        { path: ["files", "/etc/passwd", "sha256"], value: "ab12" },
        { path: ["files", "/etc/app.conf", "mode"], value: "0644" },
      ],
      expected: swap(
        before,
        '  - { path: /etc/passwd, mode: "0644", owner: root, group: root }\n',
        '  - { path: /etc/passwd, mode: "0644", group: root, sha256: ab12 }\n  - { path: /etc/app.conf, mode: "0644" }\n',
      ),
      removed: ['  - { path: /etc/passwd, mode: "0644", owner: root, group: root }'],
      added: [
        '  - { path: /etc/passwd, mode: "0644", group: root, sha256: ab12 }',
        '  - { path: /etc/app.conf, mode: "0644" }',
      ],
      reads: expectReads(parse(before), (d) => {
        d.files = [
          { path: "/etc/passwd", mode: "0644", group: "root", sha256: "ab12" },
          { path: "/etc/app.conf", mode: "0644" },
        ];
      }),
    });
  });

  it("appends a whole new item in the list's block style, with its contents as a `|` block", () => {
    const before = sample("groups/db.yaml");
    const item = {
      path: "/etc/postgresql/15/main/pg_hba.conf",
      contents: "local all postgres peer\nhost all all 10.0.0.0/8 scram-sha-256\n",
      mode: "0640",
      owner: "postgres",
    };
    const added = [
      "  - path: /etc/postgresql/15/main/pg_hba.conf",
      "    contents: |",
      "      local all postgres peer",
      "      host all all 10.0.0.0/8 scram-sha-256",
      '    mode: "0640"',
      "    owner: postgres",
    ];
    check(before, {
      changes: [{ path: ["files", item.path], value: item }],
      expected: before + added.join("\n") + "\n",
      removed: [],
      added,
      reads: expectReads(parse(before), (d) => d.files.push(item)),
    });
  });

  it("writes a new short item as a block map too when the list's items are block maps", () => {
    const before = sample("groups/db.yaml");
    check(before, {
      changes: [
        { path: ["files", "/etc/postgresql/15/main/pg_ident.conf", "mode"], value: "0640" },
      ],
      expected: before + '  - path: /etc/postgresql/15/main/pg_ident.conf\n    mode: "0640"\n',
      removed: [],
      added: ["  - path: /etc/postgresql/15/main/pg_ident.conf", '    mode: "0640"'],
      reads: expectReads(parse(before), (d) =>
        d.files.push({ path: "/etc/postgresql/15/main/pg_ident.conf", mode: "0640" }),
      ),
    });
  });

  it("deletes a keyed item with its trailing comment, and replaces a flow list whole", () => {
    const before = sample("groups/db.yaml");
    const gone = [
      "  - path: /etc/postgresql/15/main/replication.env",
      "    sha256: 9f2c5d0e4b7a1c3e8f6a2d4b0c9e7f1a3b5d7c9e1f3a5b7d9c1e3f5a7b9d1c3e",
      "    secret: true                 # compared by hash only: never shown, never stored",
    ];
    check(before, {
      changes: [
        { path: ["files", "/etc/postgresql/15/main/replication.env"], delete: true },
        { path: ["networking", "listening_ports"], value: ["tcp/22", "tcp/5432", "tcp/9187"] },
      ],
      expected: swap(
        swap(before, gone.join("\n") + "\n", ""),
        "  listening_ports: [tcp/22, tcp/5432]",
        "  listening_ports: [tcp/22, tcp/5432, tcp/9187]",
      ),
      removed: ["  listening_ports: [tcp/22, tcp/5432]", ...gone],
      added: ["  listening_ports: [tcp/22, tcp/5432, tcp/9187]"],
      reads: expectReads(parse(before), (d) => {
        d.files.pop();
        d.networking.listening_ports.push("tcp/9187");
      }),
    });
  });

  it("replaces the routes list whole, leaving unchanged routes and the key's comment byte-identical", () => {
    const before = sample("nodes/web-01.yaml");
    const routes = [
      { dst: "default", via: "10.0.0.1", dev: "eth0" },
      { dst: "10.30.0.0/16", via: "10.0.0.254", dev: "eth0" },
      { dst: "10.20.0.0/16", via: "10.0.0.254", dev: "eth0" },
    ];
    check(before, {
      changes: [{ path: ["networking", "routes"], value: routes }],
      expected: swap(
        before,
        "    - { dst: 10.20.0.0/16,",
        "    - { dst: 10.30.0.0/16, via: 10.0.0.254, dev: eth0 }\n    - { dst: 10.20.0.0/16,",
      ),
      removed: [],
      added: ["    - { dst: 10.30.0.0/16, via: 10.0.0.254, dev: eth0 }"],
      reads: expectReads(parse(before), (d) => (d.networking.routes = routes)),
    });
  });

  it("sets a value that a node deleted with `null`, keeping the comment's column", () => {
    const before = sample("nodes/worker-01.yaml");
    const old =
      "    fs.protected_hardlinks: null # `null` deletes a fleet-wide value for this node only";
    const now =
      "    fs.protected_hardlinks: 0    # `null` deletes a fleet-wide value for this node only";
    check(before, {
      changes: [{ path: ["system", "sysctl_parameters", "fs.protected_hardlinks"], value: 0 }],
      expected: swap(before, old, now),
      removed: [old],
      added: [now],
      reads: expectReads(
        parse(before),
        (d) => (d.system.sysctl_parameters["fs.protected_hardlinks"] = 0),
      ),
    });
  });

  it("shortens a commented flow list without moving its comment", () => {
    const before = sample("groups/base.yaml");
    const old = "    absent: [floppy, cramfs]     # modules that must never be loaded";
    const now = "    absent: [floppy]             # modules that must never be loaded";
    check(before, {
      changes: [{ path: ["system", "kernel_modules", "absent"], value: ["floppy"] }],
      expected: swap(before, old, now),
      removed: [old],
      added: [now],
      reads: expectReads(parse(before), (d) => (d.system.kernel_modules.absent = ["floppy"])),
    });
  });
});

describe("applyChanges: scalars YAML would read as another type", () => {
  const cases: [value: string | number | boolean | null, line: string][] = [
    ["0644", 'v: "0644"'],
    ["1.0", 'v: "1.0"'],
    ["yes", 'v: "yes"'],
    ["null", 'v: "null"'],
    ["1.22", 'v: "1.22"'],
    ["2027-03-31", 'v: "2027-03-31"'],
    ["", 'v: ""'],
    ["a # b", 'v: "a # b"'],
    ["*", 'v: "*"'],
    [" padded", 'v: " padded"'],
    ["6.1.0-28-amd64", "v: 6.1.0-28-amd64"],
    ["café ☕", "v: café ☕"],
    ["line\u2028separator", 'v: "line\\u2028separator"'],
    [1.22, "v: 1.22"],
    [true, "v: true"],
    [null, "v: null"],
  ];
  // The comment stays in column 16 unless the value pushes it right.
  const commented = (line: string) => `${line.length < 15 ? line.padEnd(15) : line} # why`;
  for (const [value, line] of cases) {
    it(`writes ${JSON.stringify(value)} as \`${line}\``, () => {
      check(`k: 1\n${commented("v: old")}\n`, {
        changes: [{ path: ["v"], value }],
        expected: `k: 1\n${commented(line)}\n`,
        removed: [commented("v: old")],
        added: [commented(line)],
        reads: { k: 1, v: value },
      });
    });
  }

  it("keeps single and double quotes of existing scalars", () => {
    check("a: 'x'\nb: \"y\"\n", {
      changes: [
        { path: ["a"], value: "it's" },
        { path: ["b"], value: 'say "hi"' },
      ],
      expected: "a: 'it''s'\nb: \"say \\\"hi\\\"\"\n",
      removed: ["a: 'x'", 'b: "y"'],
      added: ["a: 'it''s'", 'b: "say \\"hi\\""'],
      reads: { a: "it's", b: 'say "hi"' },
    });
  });

  it("writes a number plain even where a quoted string stood, because the value's type changed", () => {
    check('n: "8192"\n', {
      changes: [{ path: ["n"], value: 4096 }],
      expected: "n: 4096\n",
      removed: ['n: "8192"'],
      added: ["n: 4096"],
      reads: { n: 4096 },
    });
  });
});

describe("applyChanges: block scalars round-trip byte-exactly", () => {
  const base = 'files:\n  - path: /etc/motd\n    contents: |\n      hello\n    mode: "0644"\n';
  const cases: [value: string, lines: string[]][] = [
    ["hello\nworld\n", ["    contents: |", "      hello", "      world"]],
    ["hello\nworld", ["    contents: |-", "      hello", "      world"]],
    ["hello\n\n\n", ["    contents: |+", "      hello", "", ""]],
    ["  indented\nnext\n", ["    contents: |2", "        indented", "      next"]],
    ["tab\there\n", ["    contents: |", "      tab\there"]],
    ["über ✓\n", ["    contents: |", "      über ✓"]],
  ];
  for (const [value, lines] of cases) {
    it(`writes ${JSON.stringify(value)} with the right indicators`, () => {
      const expected = swap(base, "    contents: |\n      hello\n", lines.join("\n") + "\n");
      const after = applyChanges(
        base,
        [{ path: ["files", "/etc/motd", "contents"], value }],
        LISTS,
      );
      assert.equal(after, expected);
      assert.deepEqual(parse(after), {
        files: [{ path: "/etc/motd", contents: value, mode: "0644" }],
      });
    });
  }

  it("turns a one-line value that becomes multi-line into a `|` block, keeping the line's comment on the header", () => {
    check("motd: hi   # shown at login\nnext: 1\n", {
      changes: [{ path: ["motd"], value: "hello\nworld\n" }],
      expected: "motd: |   # shown at login\n  hello\n  world\nnext: 1\n",
      removed: ["motd: hi   # shown at login"],
      added: ["motd: |   # shown at login", "  hello", "  world"],
      reads: { motd: "hello\nworld\n", next: 1 },
    });
  });

  it("keeps a block header's comment and a block at the end of a file with no final line break", () => {
    const before = "motd: |  # greeting\n  hello";
    const after = applyChanges(before, [{ path: ["motd"], value: "bye\n" }], LISTS);
    assert.equal(after, "motd: |  # greeting\n  bye\n");
    assert.deepEqual(parse(after), { motd: "bye\n" });
  });

  it("writes a multi-line string inside a flow map double-quoted, since flow maps cannot hold blocks", () => {
    check("files:\n  - { path: /etc/motd, contents: hi }\n", {
      changes: [{ path: ["files", "/etc/motd", "contents"], value: "a\nb\n" }],
      expected: 'files:\n  - { path: /etc/motd, contents: "a\\nb\\n" }\n',
      removed: ["  - { path: /etc/motd, contents: hi }"],
      added: ['  - { path: /etc/motd, contents: "a\\nb\\n" }'],
      reads: { files: [{ path: "/etc/motd", contents: "a\nb\n" }] },
    });
  });
});

describe("applyChanges: adding keys", () => {
  it("adds to a flow map in flow style, padded or not as the map is written", () => {
    check("policy:\n  routes: { severity: critical }\n  kernel: {severity: high}\n", {
      changes: [
        { path: ["policy", "routes", "on_drift"], value: "accept" },
        { path: ["policy", "kernel", "on_drift"], value: "ticket" },
      ],
      expected:
        "policy:\n  routes: { severity: critical, on_drift: accept }\n  kernel: {severity: high, on_drift: ticket}\n",
      removed: ["  routes: { severity: critical }", "  kernel: {severity: high}"],
      added: [
        "  routes: { severity: critical, on_drift: accept }",
        "  kernel: {severity: high, on_drift: ticket}",
      ],
      reads: {
        policy: {
          routes: { severity: "critical", on_drift: "accept" },
          kernel: { severity: "high", on_drift: "ticket" },
        },
      },
    });
  });

  it("adds a key at the end of its block map, before the next section's comment", () => {
    const before =
      "ssh:\n  user: qmaudit   # audit account\n\n# Declared state\nsystem:\n  kernel_version: 6.1.0\n";
    check(before, {
      changes: [{ path: ["ssh", "timeout"], value: 30 }],
      expected:
        "ssh:\n  user: qmaudit   # audit account\n  timeout: 30\n\n# Declared state\nsystem:\n  kernel_version: 6.1.0\n",
      removed: [],
      added: ["  timeout: 30"],
      reads: { ssh: { user: "qmaudit", timeout: 30 }, system: { kernel_version: "6.1.0" } },
    });
  });

  it("follows the file's indentation when it creates maps", () => {
    check("system:\n    kernel_version: 6.1.0\n", {
      changes: [{ path: ["system", "sysctl_parameters", "vm.swappiness"], value: 10 }],
      expected:
        "system:\n    kernel_version: 6.1.0\n    sysctl_parameters:\n        vm.swappiness: 10\n",
      removed: [],
      added: ["    sysctl_parameters:", "        vm.swappiness: 10"],
      reads: { system: { kernel_version: "6.1.0", sysctl_parameters: { "vm.swappiness": 10 } } },
    });
  });

  it("creates a keyed list with its first item when the file declares none", () => {
    check("host: db-02\n", {
      changes: [
        { path: ["files", "/etc/app.conf", "mode"], value: "0644" },
        { path: ["systemd", "units", "app.service", "enabled"], value: true },
      ],
      expected:
        'host: db-02\nfiles:\n  - { path: /etc/app.conf, mode: "0644" }\nsystemd:\n  units:\n    - { name: app.service, enabled: true }\n',
      removed: [],
      added: [
        "files:",
        '  - { path: /etc/app.conf, mode: "0644" }',
        "systemd:",
        "  units:",
        "    - { name: app.service, enabled: true }",
      ],
      reads: {
        host: "db-02",
        files: [{ path: "/etc/app.conf", mode: "0644" }],
        systemd: { units: [{ name: "app.service", enabled: true }] },
      },
    });
  });

  it("fills a key that has no value yet, keeping that line's comment", () => {
    check("system:   # filled in by accept PRs\nhost: x\n", {
      changes: [{ path: ["system", "sysctl_parameters", "a.b"], value: 1 }],
      expected: "system:   # filled in by accept PRs\n  sysctl_parameters:\n    a.b: 1\nhost: x\n",
      removed: [],
      added: ["  sysctl_parameters:", "    a.b: 1"],
      reads: { system: { sysctl_parameters: { "a.b": 1 } }, host: "x" },
    });
  });

  it("appends `- name = value` to an empty list-form list", () => {
    check("system:\n  sysctl_parameters: []\n", {
      changes: [{ path: ["system", "sysctl_parameters", "vm.swappiness"], value: 10 }],
      expected: "system:\n  sysctl_parameters:\n    - vm.swappiness = 10\n",
      removed: ["  sysctl_parameters: []"],
      added: ["  sysctl_parameters:", "    - vm.swappiness = 10"],
      reads: { system: { sysctl_parameters: ["vm.swappiness = 10"] } },
    });
  });

  it("quotes keys YAML would misread", () => {
    check('storage:\n  io_scheduler:\n    "sd*": mq-deadline\n', {
      changes: [
        { path: ["storage", "io_scheduler", "*"], value: "none" },
        { path: ["storage", "io_scheduler", "vd*"], value: "none" },
      ],
      expected: 'storage:\n  io_scheduler:\n    "sd*": mq-deadline\n    "*": none\n    vd*: none\n',
      removed: [],
      added: ['    "*": none', "    vd*: none"],
      reads: { storage: { io_scheduler: { "sd*": "mq-deadline", "*": "none", "vd*": "none" } } },
    });
  });
});

describe("applyChanges: whole files", () => {
  const sysctl: DeclaredChange[] = [
    { path: ["system", "sysctl_parameters", "net.core.somaxconn"], value: 1024 },
  ];
  const block = "system:\n  sysctl_parameters:\n    net.core.somaxconn: 1024\n";
  const reads = { system: { sysctl_parameters: { "net.core.somaxconn": 1024 } } };

  it("writes into an empty file", () => {
    check("", {
      changes: sysctl,
      expected: block,
      removed: [],
      added: ["system:", "  sysctl_parameters:", "    net.core.somaxconn: 1024"],
      reads,
    });
  });

  it("replaces a file holding only `{}` with block style", () => {
    check("{}\n", {
      changes: sysctl,
      expected: block,
      removed: ["{}"],
      added: ["system:", "  sysctl_parameters:", "    net.core.somaxconn: 1024"],
      reads,
    });
  });

  it("keeps a `# yaml-language-server` header and a `---` document start", () => {
    const before =
      "# yaml-language-server: $schema=../../schemas/node-spec.schema.json\n---\n# no overrides yet\n";
    check(before, {
      changes: sysctl,
      expected: before + block,
      removed: [],
      added: ["system:", "  sysctl_parameters:", "    net.core.somaxconn: 1024"],
      reads,
    });
  });

  it("keeps CRLF line endings on every line, old and new", () => {
    const before =
      "host: a\r\nsystem:\r\n  sysctl_parameters:\r\n    vm.swappiness: 60  # default\r\n    fs.file-max: 1\r\n";
    const after = applyChanges(
      before,
      [
        { path: ["system", "sysctl_parameters", "vm.swappiness"], value: 10 },
        { path: ["system", "sysctl_parameters", "fs.file-max"], delete: true },
        { path: ["system", "sysctl_parameters", "net.core.somaxconn"], value: 1024 },
        { path: ["files", "/etc/motd", "contents"], value: "hi\nthere\n" },
      ],
      LISTS,
    );
    assert.equal(
      after,
      "host: a\r\nsystem:\r\n  sysctl_parameters:\r\n    vm.swappiness: 10  # default\r\n    net.core.somaxconn: 1024\r\nfiles:\r\n  - path: /etc/motd\r\n    contents: |\r\n      hi\r\n      there\r\n",
    );
    assert.deepEqual(parse(after), {
      host: "a",
      system: { sysctl_parameters: { "vm.swappiness": 10, "net.core.somaxconn": 1024 } },
      files: [{ path: "/etc/motd", contents: "hi\nthere\n" }],
    });
  });

  it("keeps a missing final line break missing", () => {
    check("a: 1\nb: 2", {
      changes: [{ path: ["c"], value: 3 }],
      expected: "a: 1\nb: 2\nc: 3",
      removed: [],
      added: ["c: 3"],
      reads: { a: 1, b: 2, c: 3 },
    });
  });

  it("keeps Unicode keys, values and comments as they are", () => {
    check("# Ünïcödé fleet ✓\nlabels:\n  équipe: réseau   # 团队\n  ☕: 1\n", {
      changes: [
        { path: ["labels", "☕"], value: 2 },
        { path: ["labels", "城市"], value: "東京" },
      ],
      expected: "# Ünïcödé fleet ✓\nlabels:\n  équipe: réseau   # 团队\n  ☕: 2\n  城市: 東京\n",
      removed: ["  ☕: 1"],
      added: ["  ☕: 2", "  城市: 東京"],
      reads: { labels: { équipe: "réseau", "☕": 2, 城市: "東京" } },
    });
  });
});

describe("applyChanges: deleting", () => {
  it("removes a key without touching the comment above it or its neighbours", () => {
    check("sysctl:\n  # kept: says why a\n  a: 1\n  b: 2   # b\n  c: 3\n", {
      changes: [{ path: ["sysctl", "b"], delete: true }],
      expected: "sysctl:\n  # kept: says why a\n  a: 1\n  c: 3\n",
      removed: ["  b: 2   # b"],
      added: [],
      reads: { sysctl: { a: 1, c: 3 } },
    });
  });

  it("writes `{}` when the last key of a map goes, so the file still declares an empty map rather than null", () => {
    check("system:\n  sysctl_parameters:   # node overrides\n    a.b: 1\nhost: x\n", {
      changes: [{ path: ["system", "sysctl_parameters", "a.b"], delete: true }],
      expected: "system:\n  sysctl_parameters: {}   # node overrides\nhost: x\n",
      removed: ["  sysctl_parameters:   # node overrides", "    a.b: 1"],
      added: ["  sysctl_parameters: {}   # node overrides"],
      reads: { system: { sysctl_parameters: {} }, host: "x" },
    });
  });

  it("removes pairs from a flow map: first, last and only", () => {
    check("a: { x: 1, y: 2, z: 3 }\nb: { x: 1, y: 2 }\nc: { x: 1 }\n", {
      changes: [
        { path: ["a", "x"], delete: true },
        { path: ["b", "y"], delete: true },
        { path: ["c", "x"], delete: true },
      ],
      expected: "a: { y: 2, z: 3 }\nb: { x: 1 }\nc: {}\n",
      removed: ["a: { x: 1, y: 2, z: 3 }", "b: { x: 1, y: 2 }", "c: { x: 1 }"],
      added: ["a: { y: 2, z: 3 }", "b: { x: 1 }", "c: {}"],
      reads: { a: { y: 2, z: 3 }, b: { x: 1 }, c: {} },
    });
  });

  it("removes the field on an item's dash line by pulling the next field up", () => {
    check("files:\n  - owner: root\n    path: /etc/a\n", {
      changes: [{ path: ["files", "/etc/a", "owner"], delete: true }],
      expected: "files:\n  - path: /etc/a\n",
      removed: ["  - owner: root", "    path: /etc/a"],
      added: ["  - path: /etc/a"],
      reads: { files: [{ path: "/etc/a" }] },
    });
  });

  it("leaves the file as it is when the key to delete is not declared there", () => {
    const before = "a: 1 # one\n";
    assert.equal(applyChanges(before, [{ path: ["a", "b"], delete: true }], LISTS), before);
    assert.equal(applyChanges(before, [{ path: ["b", "c"], delete: true }], LISTS), before);
  });
});

describe("applyChanges refuses edits it cannot make safely", () => {
  it("rejects text that is not valid YAML", () => {
    assert.throws(
      () => applyChanges("a: [1\n", [{ path: ["a"], value: 1 }], LISTS),
      ManifestEditError,
    );
  });

  it("rejects a file that is not a map", () => {
    assert.throws(
      () => applyChanges("- a\n", [{ path: ["a"], value: 1 }], LISTS),
      ManifestEditError,
    );
  });

  it("rejects a map value for a `name = value` item", () => {
    assert.throws(
      () =>
        applyChanges(
          "system:\n  sysctl_parameters:\n    - a = 1\n",
          [{ path: ["system", "sysctl_parameters", "a"], value: { x: 1 } }],
          LISTS,
        ),
      /single value/,
    );
  });

  it("names the path in its refusal as manifest-diff shows it: a dotted sysctl name in brackets", () => {
    assert.throws(
      () =>
        applyChanges(
          "system:\n  sysctl_parameters:\n    - net.ipv4.ip_forward = 1\n",
          [{ path: ["system", "sysctl_parameters", "net.ipv4.ip_forward"], value: { x: 1 } }],
          LISTS,
        ),
      {
        message:
          'system.sysctl_parameters[net.ipv4.ip_forward]: a "name = value" item holds a single value',
      },
    );
  });

  it("rejects a change inside a list that is replaced whole", () => {
    assert.throws(
      () => applyChanges("ports: [tcp/22]\n", [{ path: ["ports", "tcp/80"], value: 1 }], LISTS),
      /replaced whole/,
    );
  });
});

describe("declaredIn", () => {
  it("reads keyed lists and list-form sysctls as the maps the loader makes of them", () => {
    assert.deepEqual(declaredIn(sample("fleet.yaml"), LISTS).system, {
      sysctl_parameters: { "net.ipv4.tcp_syncookies": "1", "fs.protected_hardlinks": "1" },
    });
    assert.deepEqual(Object.keys(declaredIn(sample("groups/db.yaml"), LISTS).files as object), [
      "/etc/postgresql/15/main/conf.d/tuning.conf",
      "/etc/postgresql/15/main/replication.env",
    ]);
    assert.deepEqual(declaredIn("", LISTS), {});
  });
});

describe("applyChanges on a key with no value", () => {
  it("writes the value after the colon, keeping the comment's column", () => {
    check("a: 1\nsystem:     # to decide\n", {
      changes: [{ path: ["system"], value: "x" }],
      expected: "a: 1\nsystem: x   # to decide\n",
      removed: ["system:     # to decide"],
      added: ["system: x   # to decide"],
      reads: { a: 1, system: "x" },
    });
  });
});
