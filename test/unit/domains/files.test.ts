import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { files, type FilesDeclared } from "../../../src/domains/files/index.js";
import {
  parseFiles,
  parseSha256,
  parseStat,
  type FilesLive,
} from "../../../src/domains/files/parse.js";
import { NOBODY, runProbe } from "./live-probe.js";

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/files/${name}`, import.meta.url), "latin1");
const hash = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const declare = (items: unknown[]) => files.schema.parse(items);
const CAP = 1024;

describe("files: manifest", () => {
  const error = (item: unknown) => {
    const result = files.schema.safeParse([item]);
    assert.equal(result.success, false, JSON.stringify(item));
    return result.error.issues.map((i) => i.message).join("; ");
  };

  it("normalizes a mode to four octal digits", () => {
    assert.deepEqual(
      declare([
        { path: "/etc/a", mode: "644" },
        { path: "/etc/b", mode: "2755" },
      ]).map((f) => f.mode),
      ["0644", "2755"],
    );
  });

  it("tells the user to quote a mode YAML read as a number", () => {
    assert.match(
      error({ path: "/etc/a", mode: 644 }),
      /quote the mode as an octal string, like mode: "0644" \(YAML reads 644 unquoted/,
    );
    assert.match(error({ path: "/etc/a", mode: "0o644" }), /octal mode like "0644"/);
  });

  it("rejects relative paths, .. segments and control characters", () => {
    assert.match(error({ path: "etc/a" }), /absolute path/);
    assert.match(error({ path: "/etc/../root/.ssh/authorized_keys" }), /`\.\.` segments/);
    assert.match(error({ path: "/etc/a\nb" }), /control characters/);
  });

  it("rejects contradictory declarations", () => {
    assert.match(
      error({ path: "/etc/a", absent: true, mode: "0644" }),
      /declared absent has no mode/,
    );
    assert.match(
      error({ path: "/etc/a", contents: "x", sha256: "a".repeat(64) }),
      /contents or sha256, not both/,
    );
    assert.match(
      error({ path: "/etc/a", secret: true, contents: "hunter2" }),
      /contents stay out of the manifest/,
    );
    assert.match(error({ path: "/etc/a", sha256: "ABC" }), /64 lower-case hex/);
    assert.match(
      error({ path: "/etc/a", link: "/etc/b", contents: "x", mode: "0644" }),
      /a symlink \(link\) has no contents, mode of its own/,
    );
    assert.match(
      error({ path: "/etc/a", link: "/etc/b", absent: true }),
      /declared absent has no link/,
    );
    const twice = files.schema.safeParse([{ path: "/etc/a" }, { path: "/etc/a" }]);
    assert.match(twice.error!.issues[0]!.message, /\/etc\/a is declared twice/);
  });
});

describe("files: stat and sha256sum parsers", () => {
  it("reads GNU stat output and its errors", () => {
    const paths = [
      "/etc/passwd",
      "/etc/shadow",
      "/etc/ssl",
      "/etc/no-such-file",
      "/etc/passwd/x",
      "/etc/hostname",
    ];
    const { files: found, unknown } = parseStat(fixture("stat-gnu.txt"), paths);
    assert.deepEqual(found.get("/etc/shadow"), {
      size: 680,
      mode: "0640",
      owner: "root",
      uid: "0",
      group: "shadow",
      gid: "42",
      type: "regular file",
    });
    assert.equal(found.get("/etc/ssl")!.type, "directory");
    assert.equal(found.get("/etc/no-such-file"), null);
    assert.equal(found.get("/etc/passwd/x"), null);
    assert.deepEqual(unknown, []);
  });

  it("does not call a file it may not look at missing", () => {
    const { files: found, unknown } = parseStat(fixture("stat-gnu-nonroot.txt"), [
      "/root/.bashrc",
      "/etc/passwd",
    ]);
    assert.equal(found.has("/root/.bashrc"), false);
    assert.deepEqual(unknown, [
      "/root/.bashrc: cannot look at it (stat: cannot statx '/root/.bashrc': Permission denied)",
    ]);
    assert.equal(found.get("/etc/passwd")!.mode, "0644");
  });

  it("reads busybox stat output", () => {
    const paths = ["/etc/app/secret.env", "/etc/nope", "/root/app.conf", "/etc/nginx/empty.conf"];
    const { files: found, unknown } = parseStat(fixture("stat-busybox.txt"), paths);
    assert.equal(found.get("/etc/nope"), null);
    assert.equal(found.get("/etc/nginx/empty.conf")!.type, "regular empty file");
    assert.equal(unknown.length, 1);
    assert.match(unknown[0]!, /^\/root\/app.conf: cannot look at it .*Permission denied/);
  });

  it("treats empty and truncated stat output as nothing seen, never as missing", () => {
    assert.deepEqual(parseStat("", ["/etc/a"]).unknown, [
      "/etc/a: cannot look at it (stat printed nothing)",
    ]);
    const cut = parseStat("1312\t644\troot\t0\tro", ["/etc/passwd"]);
    assert.equal(cut.files.size, 0);
    assert.equal(cut.unknown.length, 1);
  });

  it("reads sha256sum output, its errors and escaped names", () => {
    const gnu = parseSha256(fixture("sha256-gnu-nonroot.txt"));
    assert.equal(
      gnu.sha256.get("/etc/passwd"),
      "9f8a3cd65d3dc07814a84aa2a7cdccf37cdce63af3f05b4c8706d915cc7d4f60",
    );
    assert.deepEqual(gnu.errors, ["sha256sum: /etc/shadow: Permission denied"]);
    const busybox = parseSha256(fixture("sha256-busybox.txt"));
    assert.equal(busybox.sha256.get("/etc/nginx/empty.conf"), hash(""));
    assert.equal(busybox.errors.length, 1);
    assert.equal(
      parseSha256(`\\${hash("")}  /etc/odd\\\\name\n`).sha256.get("/etc/odd\\name"),
      hash(""),
    );
    assert.equal(parseSha256(hash("").slice(0, 40)).sha256.size, 0);
  });
});

describe("files: probe and compare on this host", () => {
  let dir: string;
  const at = (name: string) => join(dir, name);
  const SECRET_TEXT = "PASSWORD=correct-horse-battery-staple\n";
  const audit = async (items: unknown[], command?: string[]) => {
    const declared = declare(items);
    const run = await runProbe<FilesLive>(files, declared, {
      maxFileBytes: CAP,
      ...(command ? { command } : {}),
    });
    const live = run.live!;
    return { ...run, live, findings: files.compare(declared, live) };
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "qm-files-"));
    chmodSync(dir, 0o755);
    writeFileSync(at("app.conf"), "hello world\n", { mode: 0o644 });
    writeFileSync(at("drifted.conf"), "not-the-data");
    writeFileSync(at("secret.env"), SECRET_TEXT, { mode: 0o600 });
    writeFileSync(at("big.log"), "x".repeat(CAP * 64));
    writeFileSync(at("large.conf"), "y".repeat(CAP * 2));
    writeFileSync(at("binary.dat"), Buffer.from([0xff, 0x00, 0xfe, 0x0a]));
    writeFileSync(at("utf8.conf"), "café ☕\n");
    writeFileSync(at("name with 'quote'"), "q\n");
    writeFileSync(at("café ☕.conf"), "q\n", { mode: 0o644 });
    mkdirSync(at("private"), { mode: 0o700 });
    writeFileSync(at("private/app.conf"), "hidden\n");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("finds no drift when a file matches", async () => {
    const { findings } = await audit([
      { path: at("app.conf"), contents: "hello world\n", mode: "0644", owner: "root", group: "0" },
    ]);
    assert.deepEqual(findings, []);
  });

  it("shows a content drift as the declared and live text with a -want +got diff", async () => {
    const { findings } = await audit([{ path: at("drifted.conf"), contents: "hello world\n" }]);
    assert.deepEqual(findings, [
      {
        key: at("drifted.conf"),
        declared: "hello world\n",
        live: "not-the-data",
        path: ["files", at("drifted.conf"), "contents"],
        diff: "--- want\n+++ got\n@@ -1,1 +1,1 @@\n-hello world\n+not-the-data\n\\ No newline at end of file\n",
      },
    ]);
  });

  it("reports mode, owner and group drift each under its own key", async () => {
    const { findings } = await audit([
      { path: at("app.conf"), mode: "0600", owner: "nobody", group: "65534" },
    ]);
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live, f.path.at(-1)]),
      [
        [`${at("app.conf")}:mode`, "0600", "0644", "mode"],
        [`${at("app.conf")}:owner`, "nobody", "root", "owner"],
        [`${at("app.conf")}:group`, "65534", "0", "group"],
      ],
    );
  });

  it("never lets a secret's contents leave the host or reach a finding", async () => {
    const wrong = hash("PASSWORD=old\n");
    const { findings, stdout, live } = await audit([
      { path: at("secret.env"), sha256: wrong, secret: true, mode: "0640" },
    ]);
    assert.equal(stdout.includes("correct-horse"), false, "the probe sent the secret back");
    assert.equal(JSON.stringify(findings).includes("correct-horse"), false);
    assert.equal(live.contents.size, 0);
    const contents = findings.find((f) => f.key === at("secret.env"))!;
    assert.deepEqual(
      [contents.declared, contents.live, contents.diff],
      [wrong, hash(SECRET_TEXT), undefined],
    );
    assert.deepEqual(contents.path, ["files", at("secret.env"), "sha256"]);
    assert.match(contents.detail!, /secret: compared by SHA-256/);
    assert.equal(findings.find((f) => f.key === `${at("secret.env")}:mode`)!.live, "0600");
  });

  it("finds no drift for a secret at its declared hash", async () => {
    const { findings } = await audit([
      { path: at("secret.env"), sha256: hash(SECRET_TEXT), secret: true },
    ]);
    assert.deepEqual(findings, []);
  });

  it("reads at most cap+1 bytes of a file over the cap, and shows it by the hash taken on the host", async () => {
    const { findings, live } = await audit([{ path: at("big.log"), contents: "short\n" }]);
    assert.equal(live.contents.get(at("big.log"))!.length, CAP + 1);
    assert.equal(findings.length, 1);
    assert.equal(findings[0]!.live, `sha256:${hash("x".repeat(CAP * 64))} (${CAP * 64} bytes)`);
    assert.match(findings[0]!.detail!, /over the 1024-byte cap/);
    assert.equal(findings[0]!.diff, undefined);
  });

  it("compares declared contents over the cap by hash", async () => {
    const same = await audit([{ path: at("large.conf"), contents: "y".repeat(CAP * 2) }]);
    assert.deepEqual(same.findings, []);
    assert.equal(same.live.contents.size, 0, "the file was read rather than hashed");
    const [finding] = (await audit([{ path: at("large.conf"), contents: "z".repeat(CAP * 2) }]))
      .findings;
    assert.equal(finding!.declared, `sha256:${hash("z".repeat(CAP * 2))} (${CAP * 2} bytes)`);
    assert.equal(finding!.live, `sha256:${hash("y".repeat(CAP * 2))} (${CAP * 2} bytes)`);
  });

  it("reports a missing file, with the declared contents as the diff", async () => {
    const { findings } = await audit([
      { path: at("gone.conf"), contents: "hello\n", mode: "0644" },
    ]);
    assert.deepEqual(findings, [
      {
        key: at("gone.conf"),
        declared: "present",
        live: null,
        path: ["files", at("gone.conf")],
        detail: "the file does not exist",
        diff: "--- want\n+++ got\n@@ -1,1 +0,0 @@\n-hello\n",
      },
    ]);
  });

  it("checks that a file declared absent is absent", async () => {
    assert.deepEqual((await audit([{ path: at("gone.conf"), absent: true }])).findings, []);
    const [finding] = (await audit([{ path: at("app.conf"), absent: true }])).findings;
    assert.deepEqual(
      [finding!.declared, finding!.live, finding!.detail],
      ["absent", "present", "must not exist, but is a regular file, 12 bytes"],
    );
  });

  it("compares bytes, so UTF-8 text matches and binary files show by hash", async () => {
    assert.deepEqual(
      (await audit([{ path: at("utf8.conf"), contents: "café ☕\n" }])).findings,
      [],
    );
    const [finding] = (await audit([{ path: at("binary.dat"), contents: "text\n" }])).findings;
    assert.equal(finding!.live, `sha256:${hash(Buffer.from([0xff, 0x00, 0xfe, 0x0a]))} (4 bytes)`);
    assert.equal(finding!.diff, undefined);
  });

  it("reports a directory where a file is declared", async () => {
    const [finding] = (await audit([{ path: at("private"), contents: "x\n" }])).findings;
    assert.deepEqual(
      [finding!.live, finding!.detail],
      ["<directory>", "not a regular file: a directory"],
    );
  });

  it("quotes paths the manifest gives, and reads back non-ASCII names", async () => {
    assert.deepEqual(
      (await audit([{ path: at("name with 'quote'"), contents: "q\n" }])).findings,
      [],
    );
    const { findings, live } = await audit([
      { path: at("café ☕.conf"), contents: "other\n", mode: "0600" },
    ]);
    assert.deepEqual(live.unknown, []);
    assert.deepEqual(
      findings.map((f) => f.key),
      [at("café ☕.conf"), `${at("café ☕.conf")}:mode`],
    );
  });

  it("never follows a symlink where a file is declared: type drift, the target neither read nor hashed", async () => {
    symlinkSync(at("secret.env"), at("swapped.conf"));
    const declared = [
      { path: at("swapped.conf"), contents: "hello world\n", mode: "0644" },
      { path: at("swapped.conf.sha"), sha256: hash("x") },
    ];
    symlinkSync(at("secret.env"), at("swapped.conf.sha"));
    const { findings, stdout, live } = await audit(declared);
    assert.equal(stdout.includes("correct-horse"), false, "the probe read the symlink's target");
    assert.equal(live.sha256.size, 0, "the probe hashed the symlink's target");
    assert.deepEqual(findings[0], {
      key: at("swapped.conf"),
      declared: "file",
      live: `symlink -> ${at("secret.env")}`,
      path: ["files", at("swapped.conf"), "type"],
      detail:
        "a symlink where a file is declared: not followed, its target is neither read nor hashed",
    });
    assert.deepEqual(
      findings.map((f) => f.path.at(-1)),
      ["type", "type"],
    );
    assert.deepEqual(files.accept!(declare(declared), findings[0])?.[0], {
      path: at("swapped.conf"),
      link: at("secret.env"),
    });
  });

  it("never follows a symlinked folder on the way to a declared path: type drift, nothing behind it stat'ed, hashed or read", async () => {
    mkdirSync(at("vault"), { mode: 0o700 });
    writeFileSync(at("vault/app.env"), SECRET_TEXT, { mode: 0o600 });
    symlinkSync(at("vault"), at("appdir"));
    const declared = [
      { path: at("appdir/app.env"), contents: "PASSWORD=x\n" },
      { path: at("appdir//./app.env.sha"), sha256: hash("x"), mode: "0600" },
      { path: at("appdir/gone"), absent: true },
      { path: at("app.conf"), contents: "hello world\n" },
    ];
    const { findings, stdout, live } = await audit(declared);
    assert.equal(stdout.includes("correct-horse"), false, "the probe read behind the link");
    assert.equal(stdout.includes("\t0600\t"), false, "the probe stat'ed behind the link");
    assert.equal(live.sha256.size, 0);
    const shown = `symlink ${at("appdir")} -> ${at("vault")}`;
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live, f.path.at(-1)]),
      [
        [at("appdir/app.env"), "file", shown, "type"],
        [at("appdir//./app.env.sha"), "file", shown, "type"],
        [at("appdir/gone"), "absent", shown, "type"],
      ],
    );
    assert.match(findings[0]!.detail!, /is a symlink: not followed/);
    assert.throws(() => files.accept!(declare(declared), findings[0]!), /cannot be written/);
  });

  it("compares a declared symlink's target as text, and reports a file where a symlink is declared", async () => {
    symlinkSync("app.conf", at("current.conf"));
    assert.deepEqual(
      (await audit([{ path: at("current.conf"), link: "app.conf", owner: "root" }])).findings,
      [],
    );
    const wrong = declare([{ path: at("current.conf"), link: "old.conf" }]);
    const [moved] = (await audit(wrong)).findings;
    assert.deepEqual(moved, {
      key: at("current.conf"),
      declared: "old.conf",
      live: "app.conf",
      path: ["files", at("current.conf"), "link"],
    });
    assert.deepEqual(files.accept!(wrong, moved), [{ path: at("current.conf"), link: "app.conf" }]);
    const onFile = declare([{ path: at("app.conf"), link: "app.conf.orig" }]);
    const [file] = (await audit(onFile)).findings;
    assert.deepEqual(
      [file!.declared, file!.live, file!.path.at(-1)],
      ["symlink -> app.conf.orig", "file", "type"],
    );
    assert.deepEqual(files.accept!(onFile, file!), [{ path: at("app.conf") }]);
  });

  it("reports a missing file whose name holds a quote as missing, not unknown", async () => {
    const { findings, live } = await audit([{ path: at("it's gone.conf"), mode: "0644" }]);
    assert.deepEqual(live.unknown, []);
    assert.deepEqual(
      findings.map((f) => [f.declared, f.live, f.detail]),
      [["present", null, "the file does not exist"]],
    );
  });

  it("as an unprivileged user, reports what it cannot see as unknown, never as drift", async () => {
    const { findings, live } = await audit(
      [
        { path: at("private/app.conf"), contents: "other\n" },
        { path: at("secret.env"), sha256: hash("x"), secret: true },
        { path: at("app.conf"), contents: "hello world\n", owner: "root" },
      ],
      NOBODY,
    );
    assert.deepEqual(findings, []);
    assert.equal(live.unknown.length, 2);
    assert.match(live.unknown[0]!, /private\/app.conf: cannot look at it \(.*Permission denied\)/);
    assert.match(live.unknown[1]!, /cannot hash: .*secret.env.*Permission denied/);
  });

  it("starts one stat for every path (more only for a path it cannot see), one sha256sum of the files declared by hash, one find hashing files read but over the cap, and reads through one function", async () => {
    const { script } = await audit([
      { path: at("app.conf"), contents: "hello world\n" },
      { path: at("drifted.conf"), contents: "x" },
      { path: at("secret.env"), sha256: hash("x"), secret: true },
      { path: at("big.log"), mode: "0644" },
    ]);
    assert.equal(script.match(/\bstat -c '[^']*' -- "\$@"/g)!.length, 1);
    assert.equal(
      script.match(/ -L\b/g),
      null,
      "nothing follows a symlink but the file already open",
    );
    assert.equal(script.match(/\bsha256sum -- "\$@"/g)!.length, 1);
    assert.equal(script.match(/\bfind /g)!.length, 1);
    assert.equal(script.match(/\bhead -c/g)!.length, 1);
    assert.equal(script.match(/^qm_read /gm)!.length, 2);
  });
});

describe("files: snapshot", () => {
  it("has nothing to declare unasked", () => {
    assert.equal(
      files.snapshot({
        cap: CAP,
        files: new Map(),
        links: new Map(),
        parents: new Map(),
        sha256: new Map(),
        contents: new Map(),
        unknown: [],
      }),
      undefined,
    );
  });

  it("reads no file when nothing is declared, yet emits a section that parses to nothing (snapshots)", () => {
    const probe = files.probe([] as FilesDeclared, {
      quote: String,
      mark: (label) => `mark ${label}`,
      unknown: String,
      maxFileBytes: CAP,
      lastAudit: "",
      awk: String,
      stat: String,
    });
    assert.equal(probe, `mark cap ${CAP}\nmark paths\nmark stat`);
    assert.deepEqual(
      parseFiles([
        [`cap ${CAP}`, ""],
        ["paths", ""],
        ["stat", ""],
      ]).files.size,
      0,
    );
  });
});
