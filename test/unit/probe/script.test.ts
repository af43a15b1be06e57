import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { ProbeParseError, ProbeTruncatedError } from "../../../src/errors.js";
import {
  buildProbe,
  newNonce,
  parseContext,
  parseProbeOutput,
  probeContext,
  shellQuote,
  type ProbeSection,
} from "../../../src/probe/script.js";

const run = (script: string) => execFileSync("sh", ["-s"], { input: script, encoding: "latin1" });

describe("probe framing", () => {
  it("splits sections exactly, keeping content that lacks a final newline or holds blank lines", () => {
    const nonce = newNonce();
    const probe = buildProbe(nonce, [
      { name: "a", script: "printf 'one\\n\\ntwo'" },
      { name: "b", script: "printf 'x\\n'" },
      { name: "empty", script: ":" },
    ]);
    const sections = parseProbeOutput(run(probe.script), nonce);
    assert.deepEqual(
      [...sections].map(([name, s]) => [name, s.output]),
      [
        ["a", "one\n\ntwo"],
        ["b", "x\n"],
        ["empty", ""],
      ],
    );
  });

  it("a file's contents cannot forge a section boundary without the run's nonce", () => {
    const nonce = newNonce();
    const forged = "QMdeadbeef end a\nQMdeadbeef done\n" + `${newNonce()} end a\n`;
    const probe = buildProbe(nonce, [
      { name: "a", script: `printf '%s' ${shellQuote(forged)}` },
      { name: "b", script: "echo after" },
    ]);
    const sections = parseProbeOutput(run(probe.script), nonce);
    assert.equal(sections.get("a")!.output, forged);
    assert.equal(sections.get("b")!.output, "after\n");
  });

  it("truncated output is an error, never an empty result", () => {
    const nonce = newNonce();
    const output = run(
      buildProbe(nonce, [
        { name: "a", script: "echo 1" },
        { name: "b", script: "echo 2" },
      ]).script,
    );
    for (const cut of [
      0,
      10,
      output.indexOf(" end a"),
      output.indexOf(" begin b") + 8,
      output.length - 6,
    ]) {
      assert.throws(
        () => parseProbeOutput(output.slice(0, cut), nonce),
        (e: unknown) => e instanceof ProbeTruncatedError && /truncated/.test(e.message),
        `cut at ${cut}`,
      );
    }
  });

  it("a domain the host cannot show says unknown, with its reason", () => {
    const nonce = newNonce();
    const ctx = probeContext(nonce, 1024);
    const probe = buildProbe(nonce, [
      {
        name: "kernel_modules",
        script: `[ -r /nonexistent ] || ${ctx.unknown("no /proc/modules: kernel without loadable module support")}`,
      },
    ]);
    assert.equal(
      parseProbeOutput(run(probe.script), nonce).get("kernel_modules")!.unknown,
      "no /proc/modules: kernel without loadable module support",
    );
  });

  it("marks split a section into labelled parts; labels and values are shell-quoted", () => {
    const nonce = newNonce();
    const ctx = probeContext(nonce, 1024);
    const evil = "/etc/it's $(reboot) `x`";
    const probe = buildProbe(nonce, [
      {
        name: "a",
        script: [
          ctx.mark(evil),
          `printf '%s' ${ctx.quote(evil)}`,
          ctx.mark("second"),
          "echo 2",
        ].join("\n"),
      },
    ]);
    const section = parseProbeOutput(run(probe.script), nonce).get("a")!;
    assert.deepEqual(parseContext(nonce).parts(section.output), [
      [evil, evil],
      ["second", "2\n"],
    ]);
  });
});

it("a section's positional parameters stay its own; an exit ends the probe, read as truncated", () => {
  const nonce = newNonce();
  const probe = buildProbe(nonce, [
    { name: "a", script: "set -- a b" },
    { name: "b", script: 'printf "%s" "$#"' },
  ]);
  assert.equal(parseProbeOutput(run(probe.script), nonce).get("b")!.output, "0");
  const exits = buildProbe(nonce, [
    { name: "a", script: "echo partial; exit 0" },
    { name: "b", script: "echo b" },
  ]);
  assert.throws(
    () => parseProbeOutput(run(exits.script), nonce),
    (e: unknown) => e instanceof ProbeTruncatedError,
  );
});

it("a section printed twice is an error naming it, never a silent last-wins", () => {
  const nonce = newNonce();
  const output = run(
    buildProbe(nonce, [
      { name: "a", script: "echo 1" },
      { name: "a", script: "echo 2" },
    ]).script,
  );
  assert.throws(
    () => parseProbeOutput(output, nonce),
    (e: unknown) =>
      e instanceof ProbeParseError &&
      !(e instanceof ProbeTruncatedError) &&
      e.message === "a: section appears twice in the probe output",
  );
});

describe("the shared awk", () => {
  // Each section's functions are called where its script asks, with its values as written and its
  // input as lines, and call others of theirs; all else passes through unchanged. Under each shell,
  // with mawk and busybox awk.
  const nonce = newNonce();
  const ctx = probeContext(nonce, 1024);
  const sections = [
    {
      name: "a",
      script: [
        "printf 'before\\n\\n'",
        ctx.awk("a_values", { values: ["'x\\ty\\\\z %s'", '""', '"$QM_N"'] }),
        "printf 'between'",
        ctx.awk("a_input", { input: "printf 'one\\n\\nlast without newline'" }),
        "printf 'after\\n'",
      ].join("\n"),
      awk: [
        'function a_values(  i) { for (i = 1; i <= qm_vn; i++) print i "=" qm_v[i] }',
        'function a_input(  i) { for (i = 1; i <= qm_in; i++) print "in " i ":" qm_i[i] }',
      ].join("\n"),
    },
    { name: "plain", script: "printf 'raw \\\\ bytes\\n'" },
    {
      name: "b",
      script: ctx.awk("b_files", { values: ["/proc/self/stat", "/no/such/file"] }),
      awk: [
        "function b_files(  i) { for (i = 1; i <= qm_vn; i++) print qm_v[i], b_read(qm_v[i]) }",
        "function b_read(f,  n) { while ((getline < f) > 0) n++; close(f); return n > 0 }",
        // Called by no section: left out of the program (mawk would not compile its call of a
        // function nobody defines).
        "function b_unused() { b_nowhere() }",
      ].join("\n"),
    },
  ];
  const expected = [
    [
      "a",
      `before\n\n1=x\\ty\\\\z %s\n2=\n3=${nonce}\nbetweenin 1:one\nin 2:\nin 3:last without newline\nafter\n`,
    ],
    ["b", "/proc/self/stat 1\n/no/such/file 0\n"],
    ["plain", "raw \\ bytes\n"],
  ];
  it("holds only the functions the sections call and those they call", () => {
    const script = buildProbe(nonce, sections).script;
    for (const name of ["a_values", "a_input", "b_files", "b_read"])
      assert.ok(script.includes(`function ${name}(`), name);
    assert.doesNotMatch(script, /b_unused|b_nowhere/);
  });
  for (const shell of [["dash"], ["bash", "--posix"], ["busybox", "sh"]])
    for (const awk of ["", 'awk() { busybox awk "$@"; }\n'])
      it(`under ${shell.join(" ")}, with ${awk ? "busybox awk" : "the host's awk"}`, () => {
        const script = awk + buildProbe(nonce, sections).script;
        const output = execFileSync(shell[0]!, [...shell.slice(1), "-s"], {
          input: script,
          encoding: "latin1",
        });
        const found = [...parseProbeOutput(output, nonce)].map(([name, s]) => [name, s.output]);
        assert.deepEqual(
          found.sort(([x], [y]) => x!.localeCompare(y!)),
          expected,
        );
      });
});

describe("a file two sections read one record at a time", () => {
  // `r` reads it to its end with qm_record; `k` asks for the records holding "keep", in a file
  // whose name holds a double quote and a backslash.
  const nonce = newNonce();
  const ctx = probeContext(nonce, 1024);
  const dir = mkdtempSync(path.join(tmpdir(), "qm-records-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'a "b\\c');
  writeFileSync(file, "one\nkeep 1\n\ntwo\n\n\nkeep 2\nthree\n\n");
  const reader = {
    name: "r",
    script: ctx.awk("r_read", { values: [shellQuote(file)] }),
    awk: 'function r_read(  rs, n) { rs = RS; RS = ""; while (qm_record(qm_v[1]) > 0) n++; RS = rs; close(qm_v[1]); print n " records" }',
  };
  const keeper = {
    name: "k",
    script: ctx.awk("k_kept", { values: [shellQuote(file)] }),
    awk: 'function k_kept(  n, i) { n = qm_kept(qm_v[1]); print n; for (i = 1; i <= n; i++) print "[" qm_kr[qm_v[1], i] "]" }',
    keeps: { file, holding: "keep" },
  };
  for (const awk of ["", 'awk() { busybox awk "$@"; }\n'])
    it(`the later one gets the records it asked for from the earlier read; alone, or asking for none, it is told to read the file itself (${awk ? "busybox awk" : "the host's awk"})`, () => {
      const outputs = (sections: ProbeSection[]) =>
        parseProbeOutput(run(awk + buildProbe(nonce, sections).script), nonce);
      const both = outputs([reader, keeper]);
      assert.equal(both.get("r")!.output, "3 records\n");
      assert.equal(both.get("k")!.output, "2\n[one\nkeep 1]\n[keep 2\nthree]\n");
      assert.equal(outputs([keeper]).get("k")!.output, "-1\n");
      const { name, script, awk: functions } = keeper;
      const asksNothing = { name, script, awk: functions };
      assert.equal(outputs([reader, asksNothing]).get("k")!.output, "-1\n");
    });
  it("one section at most asks for a file's records", () => {
    assert.throws(
      () => buildProbe(nonce, [keeper, { ...keeper, name: "k2" }]),
      /two sections ask for the records of one file/,
    );
  });
});

it("a host whose /dev/null is not the null device is an error saying so and how to restore it, never a probe with facts missing", () => {
  const nonce = newNonce();
  assert.match(
    buildProbe(nonce, [{ name: "a", script: "echo 1" }]).script,
    /^\[ -c \/dev\/null \] \|\| \{ printf '%s broken \/dev\/null\\n' "\$QM_N"; exit 0; \}$/m,
  );
  assert.throws(
    () => parseProbeOutput(`${nonce} broken /dev/null\n`, nonce),
    (e: unknown) =>
      e instanceof ProbeParseError &&
      !(e instanceof ProbeTruncatedError) &&
      e.message.startsWith("probe: /dev/null on this host is not the null device") &&
      e.message.endsWith("rm -f /dev/null && mknod -m 666 /dev/null c 1 3"),
  );
});

describe("the probe's one stat", () => {
  // Every section's asks in one stat process, each ask's lines its own: a link as a link with its
  // target, a name holding a space as it is, and one holding a newline (whose rest reads as a line
  // of another path) only as `?`, in its own ask. Under each shell, with mawk and busybox awk, GNU
  // and busybox stat.
  const dir = mkdtempSync(path.join(tmpdir(), "qm-stat-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  for (const name of ["plain", "a b"]) writeFileSync(path.join(dir, name), name);
  // A path whose rest after the newline reads as a line of another path.
  mkdirSync(path.join(dir, `evil\n1 root f ${dir}`), { recursive: true });
  writeFileSync(path.join(dir, `evil\n1 root f ${dir}`, "plain"), "");
  symlinkSync("plain", path.join(dir, "l"));
  symlinkSync("/etc/hostname", path.join(dir, "lo"));
  symlinkSync("missing", path.join(dir, "ld"));
  symlinkSync("t\nu", path.join(dir, "ln"));
  symlinkSync("plain", path.join(dir, "a -> b"));
  const nonce = newNonce();
  const ctx = probeContext(nonce, 1024);
  const q = shellQuote;
  const asks = [
    ctx.stat(
      `set -- "$@" ${q(`${dir}/plain`)} ${q(`${dir}/a b`)} ${q(dir)}/evil*${q(`${dir}/plain`)}`,
    ),
    ctx.stat("true"),
    ctx.stat(
      `set -- "$@" ${["l", "lo", "ld", "a -> b", "missing"].map((f) => q(`${dir}/${f}`)).join(" ")} ${q(dir)}/ln*`,
    ),
  ];
  const sections = asks.map((ask, i) => ({
    name: `s${i}`,
    script: ctx.awk("qm_stated", { values: [ask] }),
    awk: `function s${i}_none() { }`,
  }));
  const line = (name: string) => {
    const s = lstatSync(path.join(dir, name));
    const type = s.isSymbolicLink() ? "l" : s.isDirectory() ? "d" : "f";
    return `${Math.floor(s.mtimeMs / 1000)} ${userInfo().username} ${type} ${dir}/${name}`;
  };
  const expected = [
    ["s0", [line("plain"), line("a b"), "?", ""].join("\n")],
    ["s1", ""],
    [
      "s2",
      [
        line("l"),
        "-> plain",
        line("lo"),
        "-> /etc/hostname",
        line("ld"),
        "-> missing",
        line("a -> b"),
        "-> plain",
        "?",
        "",
      ].join("\n"),
    ],
  ];
  for (const shell of [["dash"], ["bash", "--posix"], ["busybox", "sh"]])
    for (const awk of ["", 'awk() { busybox awk "$@"; }\n'])
      for (const stat of ["", 'stat() { busybox stat "$@"; }\n'])
        it(`under ${shell.join(" ")}, with ${awk ? "busybox awk" : "the host's awk"}, ${stat ? "busybox stat" : "GNU stat"}`, () => {
          const script = awk + stat + buildProbe(nonce, sections, ctx.statAsks).script;
          const output = execFileSync(shell[0]!, [...shell.slice(1), "-s"], {
            input: script,
            encoding: "latin1",
          });
          const found = [...parseProbeOutput(output, nonce)].map(([name, s]) => [name, s.output]);
          assert.deepEqual(found, expected);
          assert.equal(script.split(" stat -c ").length, 2, "one stat for every ask");
        });
});
