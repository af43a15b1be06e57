import { ForgeError } from "../errors.js";
import { botClient, call, unlessMissing, type BotClient } from "./github-requests.js";
import type { GitHubSettings } from "./github-settings.js";
import type { FileChange, Forge } from "./forge.js";
import type {
  CommentRecord,
  CommitInfo,
  CommitRecord,
  IssueRecord,
  PullRecord,
  Unasked,
} from "./records.js";

// Importers name the forge's records and settings from here, beside the client that returns them.
export {
  BOT_AUTHOR,
  DEFAULT_MAX_BLOB_BYTES,
  GITHUB_LOGIN,
  settingsFromEnv,
  type GitHubSettings,
} from "./github-settings.js";
export type { CommentRecord, CommitRecord, IssueRecord, PullRecord, Unasked } from "./records.js";

/** The GitHub client: the one implementation of the Forge seam (forge.ts) that propose uses. */
export class GitHub implements Forge {
  readonly octokit: BotClient;

  constructor(readonly settings: GitHubSettings) {
    this.octokit = botClient(settings);
  }

  private get repo() {
    return { owner: this.settings.owner, repo: this.settings.repo };
  }

  private login?: Promise<string>;

  /**
   * The login the token acts as: the one given, else GET /user's. An App's or Actions' token
   * cannot read GET /user (403): that is a ForgeError saying to give it.
   */
  botLogin(): Promise<string> {
    this.login ??= this.settings.botLogin
      ? Promise.resolve(this.settings.botLogin)
      : this.readLogin();
    return this.login;
  }

  private async readLogin(): Promise<string> {
    try {
      const { data } = await call("reading the token's user", () =>
        this.octokit.rest.users.getAuthenticated(),
      );
      return data.login;
    } catch (error) {
      if (!(error instanceof ForgeError && error.status === 403)) throw error;
      throw new ForgeError(
        `${error.message}; an App's or Actions' token does not say who it is: set QUARTERMASTER_BOT_LOGIN to the login it acts as (github-actions[bot] for the workflow's token, <app-slug>[bot] for an App)`,
        { status: 403, cause: error },
      );
    }
  }

  async defaultBranch(): Promise<string> {
    const { data } = await call("reading the repository", () =>
      this.octokit.rest.repos.get(this.repo),
    );
    return data.default_branch;
  }

  async branchHead(branch: string): Promise<string | undefined> {
    const ref = await unlessMissing(`reading branch ${branch}`, () =>
      this.octokit.rest.git.getRef({ ...this.repo, ref: `heads/${branch}` }),
    );
    return ref?.data.object.sha;
  }

  /**
   * Every pull request (open and closed) from a branch of this repository starting with
   * `branchPrefix`.
   */
  async pulls(branchPrefix: string): Promise<PullRecord[]> {
    const pulls = await call("listing pull requests", () =>
      this.octokit.paginate(this.octokit.rest.pulls.list, {
        ...this.repo,
        state: "all",
        per_page: 100,
      }),
    );
    return pulls
      .filter(
        (p) =>
          p.head.ref.startsWith(branchPrefix) &&
          p.head.repo?.full_name === `${this.settings.owner}/${this.settings.repo}`,
      )
      .map((p) => ({
        number: p.number,
        state: p.state === "open" ? "open" : "closed",
        merged: p.merged_at !== null,
        branch: p.head.ref,
        title: p.title,
        body: p.body ?? "",
        labels: p.labels.map((l) => l.name),
        ...(p.user?.login !== undefined && { author: p.user.login }),
        createdAt: p.created_at,
      }));
  }

  /** The open issues labelled `label`, oldest first (pull requests, which GitHub lists too, left out). */
  async issues(label: string): Promise<IssueRecord[]> {
    const issues = await call("listing issues", () =>
      this.octokit.paginate(this.octokit.rest.issues.listForRepo, {
        ...this.repo,
        state: "open",
        labels: label,
        sort: "created",
        direction: "asc",
        per_page: 100,
      }),
    );
    return issues
      .filter((i) => !i.pull_request)
      .map((i) => ({
        number: i.number,
        body: i.body ?? "",
        ...(i.user && { author: i.user.login }),
      }));
  }

  async openIssue(input: { title: string; body: string; labels: string[] }): Promise<number> {
    const { data } = await call("opening an issue", () =>
      this.octokit.rest.issues.create({ ...this.repo, ...input }),
    );
    return data.number;
  }

  async updateIssue(number: number, body: string): Promise<void> {
    await call(`updating #${number}`, () =>
      this.octokit.rest.issues.update({ ...this.repo, issue_number: number, body }),
    );
  }

  async mergeable(number: number): Promise<boolean | undefined> {
    const { data } = await call(`reading #${number}`, () =>
      this.octokit.rest.pulls.get({ ...this.repo, pull_number: number }),
    );
    // null while GitHub is still computing it.
    return data.mergeable ?? undefined;
  }

  async pullCommits(number: number): Promise<CommitRecord[]> {
    const commits = await call(`listing commits of #${number}`, () =>
      this.octokit.paginate(this.octokit.rest.pulls.listCommits, {
        ...this.repo,
        pull_number: number,
        per_page: 100,
      }),
    );
    return commits.map((c) => ({
      ...(c.commit.author?.email !== undefined && { author: c.commit.author.email }),
      ...(c.commit.committer?.email !== undefined && { committer: c.commit.committer.email }),
    }));
  }

  /** The comments on pull request or issue `number`. */
  async comments(number: number): Promise<CommentRecord[]> {
    const comments = await call(`listing comments of #${number}`, () =>
      this.octokit.paginate(this.octokit.rest.issues.listComments, {
        ...this.repo,
        issue_number: number,
        per_page: 100,
      }),
    );
    return comments.flatMap((c) =>
      c.body === undefined
        ? []
        : [{ body: c.body, ...(c.user?.login !== undefined && { author: c.user.login }) }],
    );
  }

  /** The text of file `path` on `branch`; undefined when the branch or the file does not exist. */
  async readFile(branch: string, path: string, what: string): Promise<string | undefined> {
    const found = await unlessMissing(what, () =>
      this.octokit.rest.repos.getContent({ ...this.repo, path, ref: branch }),
    );
    if (!found) return undefined;
    const { data } = found;
    if (Array.isArray(data) || data.type !== "file" || data.content === undefined) return undefined;
    if (data.encoding !== "none") return Buffer.from(data.content, "base64").toString("utf8");
    // Over 1 MB the contents API sends no content: the blob has it.
    return (await this.readBlob(data.sha, what))?.toString("utf8");
  }

  async readBlob(sha: string, what: string): Promise<Buffer | undefined> {
    // Octokit's own JSON parser overflows its stack on a blob of a few MB (its base64 has a newline
    // every 60 characters): the body is parsed here instead.
    const found = await unlessMissing(what, () =>
      this.octokit.rest.git.getBlob({
        ...this.repo,
        file_sha: sha,
        request: { parseSuccessResponseBody: false },
      }),
    );
    if (!found) return undefined;
    const body = await new Response(found.data as unknown as ReadableStream).text();
    const { content } = JSON.parse(body) as { content: string };
    return Buffer.from(content, "base64");
  }

  async writeBlob(bytes: Buffer, what: string): Promise<string> {
    const { data } = await call(what, () =>
      this.octokit.rest.git.createBlob({
        ...this.repo,
        content: bytes.toString("base64"),
        encoding: "base64",
      }),
    );
    return data.sha;
  }

  /**
   * One commit on top of `parent` writing `files` (null removes one; none: an empty commit),
   * through the Git Data API: no clone, no push.
   */
  async commitFiles(
    parent: string,
    files: Record<string, FileChange>,
    message: string,
  ): Promise<string> {
    const { data: parentCommit } = await call("reading the base commit", () =>
      this.octokit.rest.git.getCommit({ ...this.repo, commit_sha: parent }),
    );
    // No file: a commit of the parent's own tree.
    const { data: tree } = !Object.keys(files).length
      ? { data: parentCommit.tree }
      : await call("writing the tree", () =>
          this.octokit.rest.git.createTree({
            ...this.repo,
            base_tree: parentCommit.tree.sha,
            tree: Object.entries(files).map(([path, change]) => ({
              path,
              mode: "100644" as const,
              type: "blob" as const,
              ...(typeof change === "string"
                ? { content: change }
                : { sha: change === null ? null : change.blob }),
            })),
          }),
        );
    const now = new Date().toISOString();
    const { data: commit } = await call("writing the commit", () =>
      this.octokit.rest.git.createCommit({
        ...this.repo,
        message,
        tree: tree.sha,
        parents: [parent],
        author: { ...this.settings.author, date: now },
        committer: { ...this.settings.author, date: now },
      }),
    );
    return commit.sha;
  }

  /** Creates `branch` at `sha`; false when it already exists (another writer was first). */
  async createBranch(branch: string, sha: string): Promise<boolean> {
    for (let tries = 1; ; tries++) {
      try {
        await call(`creating branch ${branch}`, () =>
          this.octokit.rest.git.createRef({ ...this.repo, ref: `refs/heads/${branch}`, sha }),
        );
        return true;
      } catch (error) {
        if (!(error instanceof ForgeError && error.status === 422)) throw error;
        // GitHub's 422 "Reference already exists", when the branch is there to read. A branch
        // deleted between the refusal and the read (a lock released meanwhile) is created again;
        // a second refusal with no branch is some other refusal.
        if (await this.branchHead(branch)) return false;
        if (tries === 2) throw error;
      }
    }
  }

  /** Commit `sha`: its author's and committer's emails, and its date as its committer wrote it. */
  async commit(sha: string): Promise<CommitInfo> {
    const { data } = await call(`reading commit ${sha}`, () =>
      this.octokit.rest.git.getCommit({ ...this.repo, commit_sha: sha }),
    );
    return {
      author: data.author.email,
      committer: data.committer.email,
      date: data.committer.date,
    };
  }

  /** Points the bot's branch at `sha`, creating it or moving it (the bot owns its branches). */
  async setBranch(branch: string, sha: string): Promise<void> {
    const existing = await this.branchHead(branch);
    if (existing === undefined) {
      await call(`creating branch ${branch}`, () =>
        this.octokit.rest.git.createRef({ ...this.repo, ref: `refs/heads/${branch}`, sha }),
      );
    } else if (existing !== sha) {
      await call(`updating branch ${branch}`, () =>
        this.octokit.rest.git.updateRef({ ...this.repo, ref: `heads/${branch}`, sha, force: true }),
      );
    }
  }

  async openPull(input: {
    branch: string;
    base: string;
    title: string;
    body: string;
  }): Promise<number> {
    const { data } = await call(`opening a pull request for ${input.branch}`, () =>
      this.octokit.rest.pulls.create({
        ...this.repo,
        head: input.branch,
        base: input.base,
        title: input.title,
        body: input.body,
      }),
    );
    return data.number;
  }

  /**
   * Asks each of `owners` to review (GitHub users, and teams written `org/team-slug`), one request
   * each: GitHub refuses a request naming one non-collaborator whole. The owners not asked, and why.
   */
  async requestReviewers(number: number, owners: readonly string[]): Promise<Unasked[]> {
    const unasked: Unasked[] = [];
    for (const owner of owners) {
      const slash = owner.indexOf("/");
      // GitHub takes a bare team slug and reads it in this repository's organization.
      if (slash >= 0 && owner.slice(0, slash).toLowerCase() !== this.settings.owner.toLowerCase()) {
        unasked.push({
          owner,
          reason: `a team of another organization than ${this.settings.owner}`,
        });
        continue;
      }
      try {
        await call(`asking ${owner} to review #${number}`, () =>
          this.octokit.rest.pulls.requestReviewers({
            ...this.repo,
            pull_number: number,
            ...(slash >= 0 ? { team_reviewers: [owner.slice(slash + 1)] } : { reviewers: [owner] }),
          }),
        );
      } catch (error) {
        if (!(error instanceof ForgeError)) throw error;
        unasked.push({ owner, reason: error.message });
      }
    }
    return unasked;
  }

  /** Adds `labels`; when GitHub refuses them together, each on its own, so one costs only itself. */
  async addLabels(number: number, labels: readonly string[]): Promise<void> {
    if (!labels.length) return;
    try {
      await this.addLabelsOnce(number, labels);
    } catch (error) {
      if (!(error instanceof ForgeError) || labels.length === 1) throw error;
      const refused: string[] = [];
      for (const label of labels)
        await this.addLabelsOnce(number, [label]).catch((one: unknown) => {
          if (!(one instanceof ForgeError)) throw one;
          refused.push(`${label} (${one.message})`);
        });
      if (refused.length)
        throw new ForgeError(`GitHub API: labelling #${number} refused ${refused.join("; ")}`, {
          status: error.status,
          cause: error,
        });
    }
  }

  private async addLabelsOnce(number: number, labels: readonly string[]): Promise<void> {
    await call(`labelling #${number}`, () =>
      this.octokit.rest.issues.addLabels({
        ...this.repo,
        issue_number: number,
        labels: [...labels],
      }),
    );
  }

  async updatePull(number: number, input: { title: string; body: string }): Promise<void> {
    await call(`updating #${number}`, () =>
      this.octokit.rest.pulls.update({
        ...this.repo,
        pull_number: number,
        title: input.title,
        body: input.body,
      }),
    );
  }

  async comment(number: number, body: string): Promise<void> {
    await call(`commenting on #${number}`, () =>
      this.octokit.rest.issues.createComment({ ...this.repo, issue_number: number, body }),
    );
  }

  async closePull(number: number): Promise<void> {
    await call(`closing #${number}`, () =>
      this.octokit.rest.pulls.update({ ...this.repo, pull_number: number, state: "closed" }),
    );
  }

  async deleteBranch(branch: string): Promise<void> {
    try {
      await call(`deleting branch ${branch}`, () =>
        this.octokit.rest.git.deleteRef({ ...this.repo, ref: `heads/${branch}` }),
      );
    } catch (error) {
      // Already gone (GitHub's "delete branch on merge", or a human): nothing to do.
      if (!(error instanceof ForgeError && (error.status === 422 || error.status === 404)))
        throw error;
    }
  }

  /** Whether `login` may write to the repository: review commands act only for such people. */
  async canWrite(login: string): Promise<boolean> {
    const { data } = await call(`reading ${login}'s permission`, () =>
      this.octokit.rest.repos.getCollaboratorPermissionLevel({ ...this.repo, username: login }),
    );
    return (
      data.permission === "admin" || data.permission === "write" || data.permission === "maintain"
    );
  }
}
