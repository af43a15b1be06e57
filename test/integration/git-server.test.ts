import assert from "node:assert/strict";
import fs from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import git from "isomorphic-git";
import http from "isomorphic-git/http/node";
import { startGitServer, type GitServer } from "../support/git-server.js";

const TOKEN = "ghs_test_token";
const onAuth = () => ({ username: "x-access-token", password: TOKEN });
const author = { name: "Fleet Operator", email: "operator@example.com" };

describe("git server", () => {
  let server: GitServer;
  let work: string;

  before(async () => {
    server = await startGitServer({ token: TOKEN });
    work = await mkdtemp(join(tmpdir(), "qm-git-server-test-"));
    const seed = join(work, "seed");
    await fs.promises.mkdir(join(seed, "nodes"), { recursive: true });
    await writeFile(join(seed, "fleet.yaml"), "policy: {}\n");
    await writeFile(join(seed, "nodes", "web-01.yaml"), "host: web-01.example.net\n");
    await server.createRepo("acme", "fleet-manifests", seed);
    await server.createRepo("acme", "empty");
  });

  after(async () => {
    await server.stop();
    await rm(work, { recursive: true, force: true });
  });

  const cliUrl = (token = TOKEN) =>
    server.repoUrl("acme", "fleet-manifests").replace("http://", `http://x-access-token:${token}@`);
  const cli = (args: string[], cwd?: string) =>
    execa("git", ["-c", `user.name=${author.name}`, "-c", `user.email=${author.email}`, ...args], {
      cwd,
      reject: false,
      env: { GIT_TERMINAL_PROMPT: "0" },
    });

  test("refuses requests without the token", async () => {
    const url = `${server.repoUrl("acme", "fleet-manifests")}/info/refs?service=git-upload-pack`;
    assert.equal((await fetch(url)).status, 401);
    const wrong = await fetch(url, {
      headers: { authorization: `Basic ${Buffer.from("x:nope").toString("base64")}` },
    });
    assert.equal(wrong.status, 401);
    const right = await fetch(url, {
      headers: { authorization: `Basic ${Buffer.from(`anyone:${TOKEN}`).toString("base64")}` },
    });
    assert.equal(right.status, 200);
    const refused = await cli(["ls-remote", cliUrl("nope")]);
    assert.notEqual(refused.exitCode, 0);
  });

  test("isomorphic-git clones the seeded branch", async () => {
    const dir = join(work, "iso-clone");
    await git.clone({
      fs,
      http,
      dir,
      url: server.repoUrl("acme", "fleet-manifests"),
      onAuth,
      singleBranch: true,
      depth: 1,
    });
    assert.equal(
      await readFile(join(dir, "nodes", "web-01.yaml"), "utf8"),
      "host: web-01.example.net\n",
    );
    assert.equal(await git.currentBranch({ fs, dir }), "main");
  });

  test("isomorphic-git pushes, is refused a non-fast-forward, and force-pushes", async () => {
    const url = server.repoUrl("acme", "fleet-manifests");
    const first = join(work, "iso-first");
    const second = join(work, "iso-second");
    await git.clone({ fs, http, dir: first, url, onAuth });
    await git.clone({ fs, http, dir: second, url, onAuth });

    await writeFile(join(first, "fleet.yaml"), "policy: { sysctl: { severity: low } }\n");
    await git.add({ fs, dir: first, filepath: "fleet.yaml" });
    const pushed = await git.commit({ fs, dir: first, message: "Lower sysctl severity", author });
    const result = await git.push({ fs, http, dir: first, remote: "origin", ref: "main", onAuth });
    assert.equal(result.ok, true);

    await writeFile(join(second, "fleet.yaml"), "policy: { sysctl: { severity: high } }\n");
    await git.add({ fs, dir: second, filepath: "fleet.yaml" });
    const rival = await git.commit({ fs, dir: second, message: "Raise sysctl severity", author });
    await assert.rejects(
      git.push({ fs, http, dir: second, remote: "origin", ref: "main", onAuth }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, "PushRejectedError");
        return true;
      },
    );
    const remote = await git.listServerRefs({ http, url, onAuth, prefix: "refs/heads/main" });
    assert.equal(remote[0]?.oid, pushed);

    await git.push({ fs, http, dir: second, remote: "origin", ref: "main", onAuth, force: true });
    const forced = await git.listServerRefs({ http, url, onAuth, prefix: "refs/heads/main" });
    assert.equal(forced[0]?.oid, rival);
  });

  test("isomorphic-git pushes a new branch into an empty repository", async () => {
    const dir = join(work, "iso-empty");
    await git.init({ fs, dir, defaultBranch: "main" });
    await writeFile(join(dir, "README"), "fleet\n");
    await git.add({ fs, dir, filepath: "README" });
    const oid = await git.commit({ fs, dir, message: "Start", author });
    await git.addRemote({ fs, dir, remote: "origin", url: server.repoUrl("acme", "empty") });
    await git.push({ fs, http, dir, remote: "origin", ref: "main", onAuth });
    const { stdout } = await execa("git", [
      "--git-dir",
      server.barePath("acme", "empty"),
      "rev-parse",
      "refs/heads/main",
    ]);
    assert.equal(stdout.trim(), oid);
  });

  test("the git CLI clones, pushes, is refused a non-fast-forward, and force-pushes", async () => {
    const first = join(work, "cli-first");
    const second = join(work, "cli-second");
    assert.equal((await cli(["clone", "--quiet", cliUrl(), first])).exitCode, 0);
    assert.equal((await cli(["clone", "--quiet", cliUrl(), second])).exitCode, 0);

    await writeFile(join(first, "nodes", "db-01.yaml"), "host: db-01.example.net\n");
    await cli(["add", "."], first);
    await cli(["commit", "--quiet", "-m", "Add db-01"], first);
    const push = await cli(["push", "origin", "main"], first);
    assert.equal(push.exitCode, 0, push.stderr);

    await writeFile(join(second, "nodes", "db-02.yaml"), "host: db-02.example.net\n");
    await cli(["add", "."], second);
    await cli(["commit", "--quiet", "-m", "Add db-02"], second);
    const refused = await cli(["push", "origin", "main"], second);
    assert.notEqual(refused.exitCode, 0);
    assert.match(refused.stderr, /rejected/);

    const forced = await cli(["push", "--force", "origin", "main"], second);
    assert.equal(forced.exitCode, 0, forced.stderr);
    const local = (await cli(["rev-parse", "HEAD"], second)).stdout.trim();
    const { stdout } = await execa("git", [
      "--git-dir",
      server.barePath("acme", "fleet-manifests"),
      "rev-parse",
      "refs/heads/main",
    ]);
    assert.equal(stdout.trim(), local);
  });
});
