import assert from "node:assert/strict";
import fs from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import git from "isomorphic-git";
import http from "isomorphic-git/http/node";
import { startGitServer, type GitServer } from "../support/git-server.js";
import {
  badGateway,
  secondaryRateLimit,
  startGitHubDouble,
  type GitHubDouble,
} from "../support/github-double/index.js";
import { testOctokit, type SeenLimit, type TestOctokit } from "../support/octokit.js";

const TOKEN = "ghs_double_token";
const repo = { owner: "acme", repo: "fleet-manifests" };
const onAuth = () => ({ username: "x-access-token", password: TOKEN });

/** The status and message of a failed Octokit call. */
async function failure(call: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await call;
  } catch (err) {
    const e = err as { status: number; message: string };
    return { status: e.status, message: e.message };
  }
  assert.fail("expected the call to fail");
}

describe("GitHub double", () => {
  let server: GitServer;
  let double: GitHubDouble;
  let octokit: TestOctokit;
  let secondaryLimits: SeenLimit[];
  let work: string;
  let mainSha: string;
  const apiBranch = "quartermaster--accept--sysctl-3f2a";
  const pushedBranch = "quartermaster--ticket--routes-9c1d";

  before(async () => {
    work = await mkdtemp(join(tmpdir(), "qm-double-test-"));
    const seed = join(work, "seed");
    await mkdir(join(seed, "nodes"), { recursive: true });
    await writeFile(join(seed, "fleet.yaml"), "policy: {}\n");
    await writeFile(
      join(seed, "nodes", "web-01.yaml"),
      "system:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 1\n",
    );
    server = await startGitServer({ token: TOKEN });
    await server.createRepo(repo.owner, repo.repo, seed);
    double = await startGitHubDouble({
      git: server,
      ...repo,
      token: TOKEN,
      botLogin: "quartermaster[bot]",
    });
    ({ octokit, secondaryLimits } = testOctokit({ baseUrl: double.apiUrl, auth: TOKEN }));
  });

  after(async () => {
    await double.stop();
    await server.stop();
    await rm(work, { recursive: true, force: true });
  });

  test("answers 401 without the token or with a wrong one, and takes both token schemes", async () => {
    const url = `${double.apiUrl}/repos/acme/fleet-manifests`;
    assert.equal((await fetch(url)).status, 401);
    const wrong = await fetch(url, { headers: { authorization: "token nope" } });
    assert.equal(wrong.status, 401);
    assert.equal(((await wrong.json()) as { message: string }).message, "Bad credentials");
    assert.equal((await fetch(url, { headers: { authorization: `token ${TOKEN}` } })).status, 200);
    assert.equal((await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
  });

  test("serves the repository and 404s for unknown ones", async () => {
    const { data } = await octokit.rest.repos.get(repo);
    assert.equal(data.default_branch, "main");
    assert.equal(data.full_name, "acme/fleet-manifests");
    assert.equal(
      (await failure(octokit.rest.repos.get({ owner: "acme", repo: "nothing" }))).status,
      404,
    );
  });

  test("commits a branch through the Git Data API", async () => {
    const { data: ref } = await octokit.rest.git.getRef({ ...repo, ref: "heads/main" });
    mainSha = ref.object.sha;
    const { data: base } = await octokit.rest.git.getCommit({ ...repo, commit_sha: mainSha });
    const { data: blob } = await octokit.rest.git.createBlob({
      ...repo,
      content: "system:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 0\n",
      encoding: "utf-8",
    });
    const { data: tree } = await octokit.rest.git.createTree({
      ...repo,
      base_tree: base.tree.sha,
      tree: [{ path: "nodes/web-01.yaml", mode: "100644", type: "blob", sha: blob.sha }],
    });
    const { data: full } = await octokit.rest.git.getTree({
      ...repo,
      tree_sha: tree.sha,
      recursive: "1",
    });
    assert.deepEqual(full.tree.map((e) => e.path).sort(), [
      "fleet.yaml",
      "nodes",
      "nodes/web-01.yaml",
    ]);
    const { data: commit } = await octokit.rest.git.createCommit({
      ...repo,
      message: "Accept net.ipv4.tcp_syncookies = 0 on web-01",
      tree: tree.sha,
      parents: [mainSha],
    });
    assert.deepEqual(
      commit.parents.map((p) => p.sha),
      [mainSha],
    );
    const { data: created } = await octokit.rest.git.createRef({
      ...repo,
      ref: `refs/heads/${apiBranch}`,
      sha: commit.sha,
    });
    assert.equal(created.object.sha, commit.sha);

    const again = await failure(
      octokit.rest.git.createRef({ ...repo, ref: `refs/heads/${apiBranch}`, sha: commit.sha }),
    );
    assert.equal(again.status, 422);
    const { data: branch } = await octokit.rest.repos.getBranch({ ...repo, branch: apiBranch });
    assert.equal(branch.commit.sha, commit.sha);
    const { data: file } = await octokit.rest.repos.getContent({
      ...repo,
      path: "nodes/web-01.yaml",
      ref: apiBranch,
    });
    assert.ok(!Array.isArray(file) && file.type === "file");
    assert.match(Buffer.from(file.content, "base64").toString("utf8"), /tcp_syncookies: 0/);
    const { stdout } = await execa("git", [
      "--git-dir",
      server.barePath(repo.owner, repo.repo),
      "rev-parse",
      `refs/heads/${apiBranch}`,
    ]);
    assert.equal(stdout.trim(), commit.sha);
  });

  test("refuses a non-fast-forward ref update unless forced", async () => {
    const side = "quartermaster--scratch";
    const { data: base } = await octokit.rest.git.getCommit({ ...repo, commit_sha: mainSha });
    const { data: lone } = await octokit.rest.git.createCommit({
      ...repo,
      message: "Unrelated",
      tree: base.tree.sha,
      parents: [],
    });
    await octokit.rest.git.createRef({ ...repo, ref: `refs/heads/${side}`, sha: mainSha });
    const refused = await failure(
      octokit.rest.git.updateRef({ ...repo, ref: `heads/${side}`, sha: lone.sha }),
    );
    assert.equal(refused.status, 422);
    assert.match(refused.message, /Update is not a fast forward/);
    const { data } = await octokit.rest.git.updateRef({
      ...repo,
      ref: `heads/${side}`,
      sha: lone.sha,
      force: true,
    });
    assert.equal(data.object.sha, lone.sha);
    await octokit.rest.git.deleteRef({ ...repo, ref: `heads/${side}` });
    assert.equal(
      (await failure(octokit.rest.git.deleteRef({ ...repo, ref: `heads/${side}` }))).status,
      422,
    );
    assert.equal(
      (await failure(octokit.rest.git.getRef({ ...repo, ref: `heads/${side}` }))).status,
      404,
    );
  });

  test("opens a pull request and refuses a second one for the same head", async () => {
    const { data: pr } = await octokit.rest.pulls.create({
      ...repo,
      head: apiBranch,
      base: "main",
      title: "Accept sysctl drift on web-01",
      body: "<!-- quartermaster -->",
    });
    assert.equal(pr.number, 1);
    assert.equal(pr.state, "open");
    assert.equal(pr.user?.login, "quartermaster[bot]");
    assert.equal(pr.commits, 1);
    assert.equal(pr.mergeable, true);
    const duplicate = await failure(
      octokit.rest.pulls.create({
        ...repo,
        head: `acme:${apiBranch}`,
        base: "main",
        title: "again",
      }),
    );
    assert.equal(duplicate.status, 422);
    assert.match(
      duplicate.message,
      new RegExp(`A pull request already exists for acme:${apiBranch}\\.`),
    );
  });

  test("asks collaborators and teams to review; refuses strangers and the author", async () => {
    double.addCollaborator("alice", "write");
    double.addTeam("web-team");
    const { data: pr } = await octokit.rest.pulls.requestReviewers({
      ...repo,
      pull_number: 1,
      reviewers: ["alice"],
      team_reviewers: ["web-team"],
    });
    assert.deepEqual(
      pr.requested_reviewers?.map((u) => u.login),
      ["alice"],
    );
    assert.deepEqual(
      pr.requested_teams?.map((t) => t.slug),
      ["web-team"],
    );
    const { data: again } = await octokit.rest.pulls.get({ ...repo, pull_number: 1 });
    assert.deepEqual(
      again.requested_reviewers?.map((u) => u.login),
      ["alice"],
    );
    for (const ask of [{ reviewers: ["mallory"] }, { team_reviewers: ["ghosts"] }]) {
      const refused = await failure(
        octokit.rest.pulls.requestReviewers({ ...repo, pull_number: 1, ...ask }),
      );
      assert.equal(refused.status, 422);
      assert.match(refused.message, /Reviews may only be requested from collaborators/);
    }
    const author = await failure(
      octokit.rest.pulls.requestReviewers({
        ...repo,
        pull_number: 1,
        reviewers: ["quartermaster[bot]"],
      }),
    );
    assert.match(author.message, /Review cannot be requested from pull request author/);
  });

  test("refuses a pull request with no commits over its base", async () => {
    await octokit.rest.git.createRef({
      ...repo,
      ref: "refs/heads/quartermaster--nothing",
      sha: mainSha,
    });
    const refused = await failure(
      octokit.rest.pulls.create({
        ...repo,
        head: "quartermaster--nothing",
        base: "main",
        title: "Nothing",
      }),
    );
    assert.equal(refused.status, 422);
    assert.match(refused.message, /No commits between main and quartermaster--nothing/);
  });

  test("refuses bodies over 65536 characters", async () => {
    const long = "x".repeat(65537);
    await octokit.rest.git.createRef({
      ...repo,
      ref: `refs/heads/${apiBranch}-long`,
      sha: (await octokit.rest.git.getRef({ ...repo, ref: `heads/${apiBranch}` })).data.object.sha,
    });
    const create = await failure(
      octokit.rest.pulls.create({
        ...repo,
        head: `${apiBranch}-long`,
        base: "main",
        title: "Long",
        body: long,
      }),
    );
    assert.equal(create.status, 422);
    assert.match(create.message, /body is too long/);
    assert.equal(
      (await failure(octokit.rest.pulls.update({ ...repo, pull_number: 1, body: long }))).status,
      422,
    );
    assert.equal(
      (await failure(octokit.rest.issues.createComment({ ...repo, issue_number: 1, body: long })))
        .status,
      422,
    );
    const { data } = await octokit.rest.pulls.create({
      ...repo,
      head: `${apiBranch}-long`,
      base: "main",
      title: "Just fits",
      body: "x".repeat(65536),
    });
    await octokit.rest.pulls.update({ ...repo, pull_number: data.number, state: "closed" });
  });

  test("updates, comments on and labels a pull request", async () => {
    const { data: updated } = await octokit.rest.pulls.update({
      ...repo,
      pull_number: 1,
      title: "Accept sysctl drift on web-01 (1 node)",
      body: "updated",
    });
    assert.equal(updated.title, "Accept sysctl drift on web-01 (1 node)");
    assert.equal(updated.body, "updated");

    const { data: comment } = await octokit.rest.issues.createComment({
      ...repo,
      issue_number: 1,
      body: "Drift still present.",
    });
    assert.equal(comment.user?.login, "quartermaster[bot]");
    const { data: comments } = await octokit.rest.issues.listComments({ ...repo, issue_number: 1 });
    assert.deepEqual(
      comments.map((c) => c.body),
      ["Drift still present."],
    );
    assert.equal(
      (await failure(octokit.rest.issues.createComment({ ...repo, issue_number: 99, body: "?" })))
        .status,
      404,
    );

    assert.equal(
      (await failure(octokit.rest.issues.getLabel({ ...repo, name: "drift:accept" }))).status,
      404,
    );
    const { data: label } = await octokit.rest.issues.createLabel({
      ...repo,
      name: "drift:accept",
      color: "0e8a16",
      description: "Accept live state",
    });
    assert.equal(label.color, "0e8a16");
    assert.equal(
      (await failure(octokit.rest.issues.createLabel({ ...repo, name: "drift:accept" }))).status,
      422,
    );
    const { data: labels } = await octokit.rest.issues.addLabels({
      ...repo,
      issue_number: 1,
      labels: ["drift:accept", "severity:medium"],
    });
    assert.deepEqual(
      labels.map((l) => l.name),
      ["drift:accept", "severity:medium"],
    );
    assert.equal(
      (await octokit.rest.issues.getLabel({ ...repo, name: "severity:medium" })).data.color,
      "ededed",
    );
    const { data: pr } = await octokit.rest.pulls.get({ ...repo, pull_number: 1 });
    assert.deepEqual(
      pr.labels.map((l) => l.name),
      ["drift:accept", "severity:medium"],
    );
    assert.equal(pr.comments, 1);
  });

  test("refuses a label name over 50 characters, adding none of the labels asked with it", async () => {
    const long = `owner:acme-infrastructure/${"x".repeat(25)}`;
    for (const request of [
      octokit.rest.issues.createLabel({ ...repo, name: long }),
      octokit.rest.issues.addLabels({ ...repo, issue_number: 1, labels: ["fits", long] }),
    ])
      assert.equal((await failure(request)).status, 422);
    const { data: pr } = await octokit.rest.pulls.get({ ...repo, pull_number: 1 });
    assert.ok(!pr.labels.some((l) => l.name === "fits"));
    await octokit.rest.issues.addLabels({ ...repo, issue_number: 1, labels: [long.slice(0, 50)] });
  });

  test("asks nobody when one reviewer of a request is not a collaborator", async () => {
    double.addCollaborator("carol", "write");
    const refused = await failure(
      octokit.rest.pulls.requestReviewers({
        ...repo,
        pull_number: 1,
        reviewers: ["carol", "mallory"],
      }),
    );
    assert.equal(refused.status, 422);
    const { data: pr } = await octokit.rest.pulls.get({ ...repo, pull_number: 1 });
    assert.ok(!pr.requested_reviewers?.some((u) => u.login === "carol"));
  });

  test("opens a pull request for a branch pushed with isomorphic-git", async () => {
    const dir = join(work, "bot-clone");
    await git.clone({
      fs,
      http,
      dir,
      url: server.repoUrl(repo.owner, repo.repo),
      onAuth,
      singleBranch: true,
      depth: 1,
    });
    await git.branch({ fs, dir, ref: pushedBranch, checkout: true });
    await mkdir(join(dir, "remediations"));
    await writeFile(
      join(dir, "remediations", "routes-9c1d.yaml"),
      "node: web-01\ndomain: routes\nstatus: open\n",
    );
    await git.add({ fs, dir, filepath: "remediations/routes-9c1d.yaml" });
    const sha = await git.commit({
      fs,
      dir,
      message: "Record remediation for routes on web-01",
      author: {
        name: "quartermaster[bot]",
        email: "2+quartermaster[bot]@users.noreply.github.com",
      },
    });
    await git.push({ fs, http, dir, remote: "origin", ref: pushedBranch, onAuth });

    const { data: branch } = await octokit.rest.repos.getBranch({ ...repo, branch: pushedBranch });
    assert.equal(branch.commit.sha, sha);
    const { data: pr } = await octokit.rest.pulls.create({
      ...repo,
      head: pushedBranch,
      base: "main",
      title: "Remediate routes on web-01",
    });
    const { data: commits } = await octokit.rest.pulls.listCommits({
      ...repo,
      pull_number: pr.number,
    });
    assert.deepEqual(
      commits.map((c) => c.sha),
      [sha],
    );
    assert.equal(commits[0]?.author?.login, "quartermaster[bot]");
    const { data: compare } = await octokit.rest.repos.compareCommitsWithBasehead({
      ...repo,
      basehead: `main...${pushedBranch}`,
    });
    assert.equal(compare.status, "ahead");
    assert.deepEqual(
      compare.files?.map((f) => [f.filename, f.status]),
      [["remediations/routes-9c1d.yaml", "added"]],
    );
  });

  test("lists pull requests with GitHub's filters and pagination", async () => {
    const open = await octokit.rest.pulls.list({ ...repo, head: `acme:${pushedBranch}` });
    assert.deepEqual(
      open.data.map((p) => p.head.ref),
      [pushedBranch],
    );
    // Without the owner GitHub ignores the head filter: a classic bot bug this makes visible.
    const unfiltered = await octokit.rest.pulls.list({ ...repo, head: pushedBranch });
    assert.equal(unfiltered.data.length, 2);
    const closed = await octokit.rest.pulls.list({ ...repo, state: "closed" });
    assert.deepEqual(
      closed.data.map((p) => p.title),
      ["Just fits"],
    );
    const page = await octokit.rest.pulls.list({
      ...repo,
      state: "all",
      per_page: 1,
      sort: "created",
      direction: "asc",
    });
    assert.equal(page.data[0]?.number, 1);
    assert.match(page.headers.link ?? "", /rel="next"/);
    const all = await octokit.paginate(octokit.rest.pulls.list, {
      ...repo,
      state: "all",
      per_page: 1,
    });
    assert.deepEqual(
      all.map((p) => p.number),
      [3, 2, 1],
    );
  });

  test("merges a pull request into the base branch of the bare repo", async () => {
    const { data: result } = await octokit.rest.pulls.merge({
      ...repo,
      pull_number: 1,
      merge_method: "merge",
    });
    assert.equal(result.merged, true);
    const { data: pr } = await octokit.rest.pulls.get({ ...repo, pull_number: 1 });
    assert.equal(pr.merged, true);
    assert.equal(pr.state, "closed");
    assert.ok(pr.merged_at);
    assert.equal(pr.merge_commit_sha, result.sha);
    assert.equal(
      (await failure(octokit.rest.pulls.merge({ ...repo, pull_number: 1 }))).status,
      405,
    );

    const dir = join(work, "after-merge");
    await git.clone({
      fs,
      http,
      dir,
      url: server.repoUrl(repo.owner, repo.repo),
      onAuth,
      singleBranch: true,
      ref: "main",
    });
    assert.match(await readFile(join(dir, "nodes", "web-01.yaml"), "utf8"), /tcp_syncookies: 0/);
    const [head] = await git.log({ fs, dir, depth: 1 });
    assert.equal(head?.oid, result.sha);
    assert.equal(head?.commit.parent.length, 2);
  });

  test("lists directories, squash-merges, and refuses to merge a conflict", async () => {
    const { data: listing } = await octokit.rest.repos.getContent({ ...repo, path: "nodes" });
    assert.ok(Array.isArray(listing));
    assert.deepEqual(
      listing.map((e) => [e.name, e.type]),
      [["web-01.yaml", "file"]],
    );

    await double.pushCommit("quartermaster--squash", { "nodes/db-01.yaml": "host: db-01\n" });
    await double.pushCommit("quartermaster--squash", {
      "nodes/db-01.yaml": "host: db-01.example.net\n",
    });
    const { data: squashPr } = await octokit.rest.pulls.create({
      ...repo,
      head: "quartermaster--squash",
      base: "main",
      title: "Add db-01",
    });
    const { data: squashed } = await octokit.rest.pulls.merge({
      ...repo,
      pull_number: squashPr.number,
      merge_method: "squash",
    });
    const { data: commit } = await octokit.rest.git.getCommit({
      ...repo,
      commit_sha: squashed.sha,
    });
    assert.equal(commit.parents.length, 1);
    assert.match(commit.message, new RegExp(`^Add db-01 \\(#${squashPr.number}\\)`));

    await double.pushCommit("quartermaster--left", {
      "fleet.yaml": "policy: { kernel: { on_drift: accept } }\n",
    });
    await double.pushCommit("quartermaster--right", {
      "fleet.yaml": "policy: { kernel: { on_drift: ticket } }\n",
    });
    const { data: left } = await octokit.rest.pulls.create({
      ...repo,
      head: "quartermaster--left",
      base: "main",
      title: "Left",
    });
    const { data: right } = await octokit.rest.pulls.create({
      ...repo,
      head: "quartermaster--right",
      base: "main",
      title: "Right",
    });
    await octokit.rest.pulls.merge({ ...repo, pull_number: left.number });
    const { data: conflicted } = await octokit.rest.pulls.get({
      ...repo,
      pull_number: right.number,
    });
    assert.equal(conflicted.mergeable, false);
    assert.equal(conflicted.mergeable_state, "dirty");
    const refused = await failure(
      octokit.rest.pulls.merge({ ...repo, pull_number: right.number, request: { retries: 0 } }),
    );
    assert.equal(refused.status, 405);
    assert.match(refused.message, /Pull Request is not mergeable/);
    await octokit.rest.pulls.update({ ...repo, pull_number: right.number, state: "closed" });
  });

  test("test controls: a person's commit, a collaborator, closing and merging", async () => {
    double.addCollaborator("alice", "write");
    const { data: alice } = await octokit.rest.repos.getCollaboratorPermissionLevel({
      ...repo,
      username: "alice",
    });
    assert.equal(alice.permission, "write");
    const { data: stranger } = await octokit.rest.repos.getCollaboratorPermissionLevel({
      ...repo,
      username: "mallory",
    });
    assert.equal(stranger.permission, "none");

    const sha = await double.pushCommit(
      pushedBranch,
      { "remediations/routes-9c1d.yaml": "node: web-01\ndomain: routes\nstatus: in-progress\n" },
      "alice",
    );
    const { data: commits } = await octokit.rest.pulls.listCommits({ ...repo, pull_number: 3 });
    assert.equal(commits.at(-1)?.sha, sha);
    assert.equal(commits.at(-1)?.author?.login, "alice");

    const merged = await double.mergePull(3);
    const { stdout } = await execa("git", [
      "--git-dir",
      server.barePath(repo.owner, repo.repo),
      "show",
      "refs/heads/main:remediations/routes-9c1d.yaml",
    ]);
    assert.match(stdout, /in-progress/);
    assert.equal(
      (await octokit.rest.repos.getBranch({ ...repo, branch: "main" })).data.commit.sha,
      merged,
    );

    await double.pushCommit("quartermaster--reject-me", {
      "fleet.yaml": "policy: { ports: { severity: low } }\n",
    });
    const { data: pr } = await octokit.rest.pulls.create({
      ...repo,
      head: "quartermaster--reject-me",
      base: "main",
      title: "Rejected",
    });
    await double.closePull(pr.number);
    assert.equal(double.pulls().find((p) => p.number === pr.number)?.state, "closed");
    assert.equal(
      (await octokit.rest.pulls.get({ ...repo, pull_number: pr.number })).data.merged,
      false,
    );
  });

  test("retries through injected 502s and a secondary rate limit", async () => {
    const before = double.requests.length;
    double.inject(badGateway({ method: "GET", path: /\/pulls$/, times: 2 }));
    const { data } = await octokit.rest.pulls.list({ ...repo, state: "all" });
    assert.equal(data.length, double.pulls().length);
    assert.deepEqual(
      double.requests.slice(before).map((r) => r.status),
      [502, 502, 200],
    );

    double.inject(secondaryRateLimit({ method: "POST", path: /\/comments$/ }));
    const { data: comment } = await octokit.rest.issues.createComment({
      ...repo,
      issue_number: 3,
      body: "Merged by a reviewer.",
    });
    assert.equal(comment.body, "Merged by a reviewer.");
    assert.equal(secondaryLimits.length, 1);
    assert.equal(secondaryLimits[0]?.retryAfter, 1);
    const posts = double.writes().filter((r) => r.path.endsWith("/issues/3/comments"));
    assert.deepEqual(
      posts.map((r) => r.status),
      [403, 201],
    );
  });

  test("correct use leaves no OpenAPI violations", () => {
    assert.deepEqual(double.violations, []);
  });

  test("a wrong request body is a 500 and a violation", async () => {
    const wrong = await failure(
      octokit.request("POST /repos/{owner}/{repo}/pulls", {
        ...repo,
        head: pushedBranch,
        base: "main",
        title: 42 as unknown as string,
        request: { retries: 0 },
      }),
    );
    assert.equal(wrong.status, 500);
    const violation = double.violations.at(-1);
    assert.equal(violation?.kind, "request");
    assert.equal(violation?.operation, "pulls/create");
    assert.ok(
      violation?.problems.some((p) => p.includes("/title must be string")),
      violation?.problems.join("\n"),
    );

    const misspelt = await failure(
      octokit.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
        ...repo,
        pull_number: 2,
        titel: "typo",
        request: { retries: 0 },
      }),
    );
    assert.equal(misspelt.status, 500);
    assert.ok(double.violations.at(-1)?.problems.some((p) => p.includes("titel")));

    const unknown = await failure(octokit.request("GET /repos/{owner}/{repo}/releases", repo));
    assert.equal(unknown.status, 404);
    assert.equal(double.violations.at(-1)?.kind, "unknown-operation");
  });

  test("fails when stopped if a pull request was opened or edited saying a value changes to itself", async () => {
    const own = await startGitHubDouble({
      git: server,
      ...repo,
      token: TOKEN,
      botLogin: "quartermaster[bot]",
    });
    const { octokit: client } = testOctokit({ baseUrl: own.apiUrl, auth: TOKEN });
    const said = async () => {
      const head = "quartermaster--ticket--kernel-self";
      await own.pushCommit(head, { "remediations/web-01.yaml": "id: self\n" });
      const { data: pr } = await client.rest.pulls.create({
        ...repo,
        head,
        base: "main",
        title: "Remediate latent kernel drift on web-01",
        body: "Quartermaster found it.",
      });
      await client.rest.pulls.update({
        ...repo,
        pull_number: pr.number,
        body: "declared `6.1.0-28-amd64` but the host runs `6.1.0-28-amd64`",
      });
    };
    await said().catch(async (error: unknown) => {
      await own.stop().catch(() => undefined);
      throw error;
    });
    await assert.rejects(own.stop(), (error: Error) => {
      assert.match(
        error.message,
        /PR 1 \(\) body: declared `6\.1\.0-28-amd64` but the host runs `6\.1\.0-28-amd64`/,
      );
      return true;
    });
  });
});

// A repository where a workflow's token and a GitHub App's installation token both write, each as
// its own account, as the shipped workflows use them.
describe("GitHub double with a GitHub App installed", () => {
  const WORKFLOW_TOKEN = "ghs_double_workflow";
  const APP_TOKEN = "ghs_double_app";
  let server: GitServer;
  let double: GitHubDouble;
  let work: string;

  before(async () => {
    work = await mkdtemp(join(tmpdir(), "qm-double-app-test-"));
    const seed = join(work, "seed");
    await mkdir(join(seed, "nodes"), { recursive: true });
    await writeFile(join(seed, "nodes", "web-01.yaml"), "host: web-01\n");
    server = await startGitServer({ token: WORKFLOW_TOKEN, appToken: APP_TOKEN });
    await server.createRepo(repo.owner, repo.repo, seed);
    double = await startGitHubDouble({
      git: server,
      ...repo,
      token: WORKFLOW_TOKEN,
      botLogin: "github-actions[bot]",
      app: { token: APP_TOKEN, slug: "quartermaster" },
    });
  });

  after(async () => {
    await double.stop();
    await server.stop();
    await rm(work, { recursive: true, force: true });
  });

  test("the App's token cannot say who it is, and what it writes is by `<slug>[bot]`", async () => {
    const { octokit: app } = testOctokit({ baseUrl: double.apiUrl, auth: APP_TOKEN });
    const { octokit: workflow } = testOctokit({ baseUrl: double.apiUrl, auth: WORKFLOW_TOKEN });
    // GitHub's answer to an installation token on GET /user, checked against its OpenAPI description.
    assert.deepEqual(await failure(app.rest.users.getAuthenticated()), {
      status: 403,
      message: "Resource not accessible by integration - https://docs.github.com/rest",
    });

    const branch = async (head: string) => {
      await double.pushCommit(head, { [`remediations/${head}.yaml`]: "id: x\n" });
      return head;
    };
    const { data: byApp } = await app.rest.pulls.create({
      ...repo,
      head: await branch("quartermaster--accept--app"),
      base: "main",
      title: "Accept by the App",
    });
    const { data: byWorkflow } = await workflow.rest.pulls.create({
      ...repo,
      head: await branch("quartermaster--accept--workflow"),
      base: "main",
      title: "Accept by the workflow",
    });
    assert.deepEqual(
      [byApp.user, byWorkflow.user].map((u) => [u?.login, u?.type]),
      [
        ["quartermaster[bot]", "Bot"],
        ["github-actions[bot]", "Bot"],
      ],
    );
    const { data: issue } = await app.rest.issues.create({ ...repo, title: "Dashboard" });
    assert.equal(issue.user?.login, "quartermaster[bot]");
    await app.rest.issues.createComment({ ...repo, issue_number: byApp.number, body: "Rebuilt." });
    assert.deepEqual(double.comments(byApp.number), [
      { body: "Rebuilt.", by: "quartermaster[bot]" },
    ]);

    // The App moves its pull request's head: a synchronize event sent by the App.
    const { data: main } = await app.rest.git.getRef({ ...repo, ref: "heads/main" });
    const { data: commit } = await app.rest.git.createCommit({
      ...repo,
      message: "Rebuild on main",
      tree: (await app.rest.git.getCommit({ ...repo, commit_sha: main.object.sha })).data.tree.sha,
      parents: [main.object.sha],
    });
    assert.equal(commit.author.email, "3+quartermaster[bot]@users.noreply.github.com");
    await app.rest.git.updateRef({
      ...repo,
      ref: "heads/quartermaster--accept--app",
      sha: commit.sha,
      force: true,
    });
    assert.deepEqual(double.pullEvents(), [
      { action: "opened", number: byApp.number, sender: "quartermaster[bot]" },
      { action: "opened", number: byWorkflow.number, sender: "github-actions[bot]" },
      { action: "synchronize", number: byApp.number, sender: "quartermaster[bot]" },
    ]);
    assert.deepEqual([...new Set(double.writes().map((w) => `${w.operation} ${w.by}`))].sort(), [
      "git/create-commit quartermaster[bot]",
      "git/update-ref quartermaster[bot]",
      "issues/create quartermaster[bot]",
      "issues/create-comment quartermaster[bot]",
      "pulls/create github-actions[bot]",
      "pulls/create quartermaster[bot]",
    ]);
    assert.deepEqual(double.violations, []);
  });

  test("git over HTTP takes the App's token as x-access-token, and no other", async () => {
    const url = (token: string) =>
      server.repoUrl(repo.owner, repo.repo).replace("http://", `http://x-access-token:${token}@`);
    const cli = (args: string[], cwd?: string) =>
      execa("git", ["-c", "user.name=App", "-c", "user.email=app@example.com", ...args], {
        cwd,
        reject: false,
        env: { GIT_TERMINAL_PROMPT: "0" },
      });
    const dir = join(work, "app-clone");
    assert.equal((await cli(["clone", "--quiet", url(APP_TOKEN), dir])).exitCode, 0);
    await writeFile(join(dir, "nodes", "web-02.yaml"), "host: web-02\n");
    await cli(["add", "."], dir);
    await cli(["commit", "--quiet", "-m", "Add web-02"], dir);
    const pushed = await cli(["push", "origin", "HEAD:refs/heads/app-push"], dir);
    assert.equal(pushed.exitCode, 0, pushed.stderr);
    const refused = await cli(["ls-remote", url("ghs_not_installed")]);
    assert.notEqual(refused.exitCode, 0);
    assert.match(refused.stderr, /Authentication failed/);
  });
});
