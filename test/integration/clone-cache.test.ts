// Two runs sharing one --repo clone cache at different commits: each reads the tree of the commit
// it pulled, whatever the other pulls meanwhile, and each reads it as a git checkout of that commit.
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { pullRepository } from "../../src/forge/clone.js";
import { manifestRevision } from "../../src/manifest/revision.js";
import { startGitServer, type GitServer } from "../support/git-server.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const TOKEN = "qm-clone-commits-4321";

describe("the clone cache at two commits", () => {
  let server: GitServer;
  let work: string;
  const git = (...args: string[]) =>
    execa("git", ["-c", "user.name=qm", "-c", "user.email=qm@example.com", ...args], {
      cwd: work,
    });
  before(async () => {
    server = await startGitServer({ token: TOKEN });
    await server.createRepo("acme", "fleet", await tree({ "nodes/a.yaml": "{}\n" }));
    work = await tree({});
    await git("clone", "--quiet", server.barePath("acme", "fleet"), ".");
  });
  after(() => server?.stop());

  it("a run still reading its commit's tree keeps it while another run pulls the next commit", async () => {
    const cache = await tree({});
    const pull = () =>
      pullRepository({
        url: server.repoUrl("acme", "fleet"),
        token: TOKEN,
        serverUrl: server.url,
        cacheDir: cache,
      });
    const first = await pull();
    await execa("sh", ["-c", "echo '{}' > nodes/b.yaml && echo 'x: 1' > nodes/a.yaml"], {
      cwd: work,
    });
    await git("add", "-A");
    await git("commit", "--quiet", "-m", "b");
    await git("push", "--quiet", "origin", "HEAD:main");
    // The second run pulls while the first one still reads its tree.
    const [second, again] = await Promise.all([pull(), pull()]);
    assert.notEqual(second.revision, first.revision);
    assert.equal(again.dir, second.dir);
    assert.deepEqual(await readdir(path.join(first.dir, "nodes")), ["a.yaml"]);
    assert.deepEqual((await readdir(path.join(second.dir, "nodes"))).sort(), ["a.yaml", "b.yaml"]);
    assert.equal(manifestRevision(first.dir), first.revision);
    assert.equal(manifestRevision(second.dir), second.revision);
  });
});
