// The --repo clone cache through the real CLI and a real git server: shared by concurrent runs,
// free of credentials, clean after a failed pull, and able to pull a tag.
import assert from "node:assert/strict";
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { runCli, spawnCli } from "../support/cli.js";
import { startGitServer, type GitServer } from "../support/git-server.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const TOKEN = "qm-cache-token-5678";

describe("the --repo clone cache", () => {
  let server: GitServer;
  let url: string;
  before(async () => {
    server = await startGitServer({ token: TOKEN });
    url = server.repoUrl("acme", "fleet");
    await server.createRepo(
      "acme",
      "fleet",
      await tree({ "fleet-manifests/nodes/a.yaml": "{}\n" }),
    );
    // v1 (lightweight) and v1-annotated name the first commit; main then gains a node.
    const bare = server.barePath("acme", "fleet");
    const git = (cwd: string, ...args: string[]) =>
      execa("git", ["-c", "user.name=qm", "-c", "user.email=qm@example.com", ...args], { cwd });
    await git(bare, "tag", "v1", "main");
    await git(bare, "tag", "-a", "-m", "release", "v1-annotated", "main");
    const work = await tree({});
    await git(work, "clone", "--quiet", bare, ".");
    await git(work, "checkout", "--quiet", "main");
    await execa("sh", ["-c", "echo '{}' > fleet-manifests/nodes/b.yaml"], { cwd: work });
    await git(work, "add", "-A");
    await git(work, "commit", "--quiet", "-m", "b");
    await git(work, "push", "--quiet", "origin", "main");
  });
  after(() => server?.stop());

  // One run after another runs in this process; runs that start at once, in processes of their own.
  const validate = (cache: string, args: string[] = [], cli = runCli) =>
    cli(["validate", "--repo", url, "--cache-dir", cache, ...args], {
      cwd: cache,
      env: { GITHUB_TOKEN: TOKEN, GITHUB_SERVER_URL: server.url },
    });

  it("20 concurrent runs sharing one --cache-dir all succeed, and leave one clone and its commit's checkout", async () => {
    const cache = await tree({});
    const results = await Promise.all(
      Array.from({ length: 20 }, () => validate(cache, [], spawnCli)),
    );
    for (const result of results) {
      assert.equal(result.exitCode, 0, result.stderr);
      assert.match(result.stdout, /valid \(2 nodes/);
    }
    const [clone, checkout, ...more] = (await readdir(cache)).sort();
    assert.deepEqual(more, []);
    assert.match(checkout!, new RegExp(`^${clone}@[0-9a-f]{40}$`));
  });

  it("credentials written in the URL are used, and never stored in the cache's .git/config", async () => {
    const cache = await tree({});
    const withCredentials = url.replace("http://", `http://x-access-token:${TOKEN}@`);
    for (let run = 0; run < 2; run++) {
      const result = await runCli(["validate", "--repo", withCredentials, "--cache-dir", cache], {
        cwd: cache,
      });
      assert.equal(result.exitCode, 0, result.stderr);
    }
    const [clone] = await readdir(cache);
    const config = await readFile(path.join(cache, clone!, ".git", "config"), "utf8");
    assert.match(config, /url = http:\/\/127\.0\.0\.1:\d+\/acme\/fleet\.git/);
    assert.equal(config.includes(TOKEN), false, config);
  });

  it("a failed pull leaves no folder in the cache", async () => {
    const cache = await tree({});
    const result = await runCli(["validate", "--repo", url, "--cache-dir", cache], { cwd: cache });
    assert.equal(result.exitCode, 4, result.stderr);
    assert.match(result.stderr, /cannot pull .*401/);
    assert.deepEqual(await readdir(cache), []);
  });

  it("--ref takes a tag, lightweight or annotated, as well as a branch", async () => {
    const cache = await tree({});
    for (const [ref, nodes] of [
      ["v1", "1 node"],
      ["v1-annotated", "1 node"],
      ["main", "2 nodes"],
      ["v1", "1 node"],
    ] as const) {
      const result = await validate(cache, ["--ref", ref]);
      assert.equal(result.exitCode, 0, `${ref}: ${result.stderr}`);
      assert.match(result.stdout, new RegExp(`valid \\(${nodes}`), ref);
    }
  });

  // Last: it moves main for every test after it.
  it("a refresh at the same commit rewrites nothing a concurrent run reads; one after a push updates", async () => {
    const cache = await tree({});
    assert.equal((await validate(cache)).exitCode, 0);
    const [clone] = await readdir(cache);
    const watched = [".git/HEAD", ".git/refs/heads/main", "fleet-manifests/nodes/a.yaml"].map(
      (file) => path.join(cache, clone!, file),
    );
    const stamps = async () =>
      Promise.all(watched.map(async (file) => (await stat(file, { bigint: true })).mtimeNs));
    const before = await stamps();
    const again = await validate(cache);
    assert.equal(again.exitCode, 0, again.stderr);
    assert.deepEqual(await stamps(), before, "a file of the checkout was written again");

    const work = await tree({});
    const git = (...args: string[]) =>
      execa("git", ["-c", "user.name=qm", "-c", "user.email=qm@example.com", ...args], {
        cwd: work,
      });
    await git("clone", "--quiet", server.barePath("acme", "fleet"), ".");
    await execa("sh", ["-c", "echo '{}' > fleet-manifests/nodes/c.yaml"], { cwd: work });
    await git("add", "-A");
    await git("commit", "--quiet", "-m", "c");
    await git("push", "--quiet", "origin", "HEAD:main");
    const moved = await validate(cache);
    assert.equal(moved.exitCode, 0, moved.stderr);
    assert.match(moved.stdout, /valid \(3 nodes/);
  });
});
