// The double's behaviour per operation: pull requests, comments and labels live here; branches,
// commits and files live in the bare repo and are read from it on every call.
import { BareRepo, GitRefusal, type GitIdentity, type TreeChange } from "./bare-repo.js";
import * as shape from "./shapes.js";
import type { Account, CommentRecord, LabelRecord, PullRecord, Site } from "./shapes.js";

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface FieldError {
  resource: string;
  code: string;
  field?: string;
  message?: string;
}

/** A GitHub error answer: status, message and, for 422, the `errors` list. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: FieldError[],
  ) {
    super(message);
  }
  reply(): Reply {
    const body: Record<string, unknown> = {
      message: this.message,
      documentation_url: "https://docs.github.com/rest",
      status: String(this.status),
    };
    if (this.errors) body.errors = this.errors;
    return { status: this.status, body };
  }
}

export const notFound = (): ApiError => new ApiError(404, "Not Found");
const validationFailed = (...errors: FieldError[]): ApiError =>
  new ApiError(422, "Validation Failed", errors);

export const MAX_BODY = 65536;
export const GITHUB_MAX_BLOB_BYTES = 100 * 1024 * 1024;
export type Permission = "admin" | "maintain" | "write" | "triage" | "read" | "none";

export interface Request {
  params: Record<string, string>;
  query: URLSearchParams;
  body: Record<string, unknown>;
  /** Absolute URL of the request, for Link headers. */
  url: URL;
  /** The account the request's token belongs to: what it writes is by this account. */
  actor: Account;
}

/**
 * A `pull_request` event GitHub sends: the pull request opened, its head moved (`synchronize`) or
 * reopened, and the account that did it (GitHub's `sender`).
 */
export interface PullEvent {
  action: "opened" | "synchronize" | "reopened";
  number: number;
  sender: string;
}

type Handler = (req: Request) => Promise<Reply>;

export class RepositoryState {
  readonly pulls = new Map<number, PullRecord>();
  /** Issues that are not pull requests; numbers are shared with pull requests, as on GitHub. */
  readonly issues = new Map<number, shape.IssueRecord>();
  readonly comments: CommentRecord[] = [];
  readonly labels = new Map<string, LabelRecord>();
  readonly accounts = new Map<string, Account>();
  readonly permissions = new Map<string, Permission>();
  /** The organization's teams with access to the repository, by slug. */
  readonly teams = new Map<string, shape.TeamRecord>();
  /** The pull_request events so far, oldest first. */
  readonly pullEvents: PullEvent[] = [];
  /** The largest blob a write may make (GitHub refuses one over 100 MiB); tests set less. */
  maxBlobBytes = GITHUB_MAX_BLOB_BYTES;
  private nextNumber = 1;
  private nextId = 1000;
  private lastPush: string;

  /** `bots`: the accounts the write tokens belong to (a workflow's, an App installation's). */
  constructor(
    readonly site: Site,
    readonly repo: BareRepo,
    readonly owner: Account,
    bots: readonly Account[],
  ) {
    this.lastPush = site.createdAt;
    this.accounts.set(owner.login, owner);
    this.permissions.set(owner.login, "admin");
    for (const bot of bots) {
      this.accounts.set(bot.login, bot);
      this.permissions.set(bot.login, "write");
    }
  }

  id(): number {
    return this.nextId++;
  }

  account(login: string): Account {
    let account = this.accounts.get(login);
    if (!account) {
      account = { login, id: this.id(), type: login.endsWith("[bot]") ? "Bot" : "User" };
      this.accounts.set(login, account);
    }
    return account;
  }

  /** Commit emails map back to accounts the way GitHub's noreply addresses do. */
  accountByEmail = (email: string): Account | undefined => {
    for (const account of this.accounts.values()) {
      if (email === noreplyEmail(account) || email === `${account.login}@users.noreply.github.com`)
        return account;
    }
    return undefined;
  };

  identity(account: Account): GitIdentity {
    return { name: account.login, email: noreplyEmail(account) };
  }

  touch(): void {
    this.lastPush = shape.now();
  }

  /** `ref` moved by `by`: a `synchronize` event for the open pull request it is the head of. */
  headMoved(ref: string, by: Account): void {
    for (const pr of this.pulls.values())
      if (pr.state === "open" && ref === `refs/heads/${pr.head}`)
        this.pullEvents.push({ action: "synchronize", number: pr.number, sender: by.login });
  }

  /** Mirrors the repo into PR records: a deleted head branch closes its PR, as on GitHub. */
  async sync(): Promise<void> {
    const open = [...this.pulls.values()].filter((pr) => pr.state === "open");
    if (open.length === 0) return;
    const branches = await this.repo.branchShas();
    for (const pr of open) {
      const sha = branches.get(pr.head);
      if (sha) pr.headSha = sha;
      else Object.assign(pr, { state: "closed", closedAt: shape.now(), updatedAt: shape.now() });
    }
  }

  readonly handlers: Record<string, Handler> = {
    "repos/get": async (req) => ({
      status: 200,
      body: shape.fullRepository(
        this.site,
        this.owner,
        this.openCount(),
        this.lastPush,
        this.permissions.get(req.actor.login) ?? "none",
      ),
    }),

    // GitHub answers an installation token (an App's, or Actions' GITHUB_TOKEN) with 403 here.
    "users/get-authenticated": async (req) => {
      if (req.actor.type === "Bot")
        throw new ApiError(403, "Resource not accessible by integration");
      return { status: 200, body: shape.publicUser(this.site, req.actor, this.site.createdAt) };
    },

    "pulls/list": async (req) => {
      const state = req.query.get("state") ?? "open";
      let list = [...this.pulls.values()].filter((pr) => state === "all" || pr.state === state);
      const head = req.query.get("head");
      // GitHub filters on head only in the `owner:branch` form and ignores a bare branch name.
      if (head?.includes(":")) {
        const [owner, branch] = splitOnce(head, ":");
        list = list.filter((pr) => owner === this.site.owner && pr.head === branch);
      }
      const base = req.query.get("base");
      if (base) list = list.filter((pr) => pr.base === base);
      const sort = req.query.get("sort") ?? "created";
      const direction = req.query.get("direction") ?? (sort === "created" ? "desc" : "asc");
      const key = (pr: PullRecord): string | number =>
        sort === "updated"
          ? pr.updatedAt
          : sort === "popularity"
            ? this.comments.filter((c) => c.issue === pr.number).length
            : pr.number;
      list.sort(
        (a, b) =>
          (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.number - b.number) *
          (direction === "desc" ? -1 : 1),
      );
      const page = paginate(list, req);
      const body = [];
      for (const pr of page.items) body.push(shape.pullSimple(await this.pullContext(pr), pr));
      return { status: 200, body, headers: page.headers };
    },

    "pulls/create": async (req) => {
      const { base, title, body, draft, maintainer_can_modify } = req.body as {
        base: string;
        head: string;
        title?: string;
        body?: string;
        draft?: boolean;
        maintainer_can_modify?: boolean;
      };
      if (req.body.issue !== undefined)
        throw new ApiError(422, "The double does not convert issues into pull requests");
      const head = this.headBranch(String(req.body.head));
      if (!title)
        throw validationFailed({ resource: "Issue", code: "missing_field", field: "title" });
      checkBodyLength(body);
      const baseSha = await this.repo.branchSha(base);
      if (!baseSha)
        throw validationFailed({ resource: "PullRequest", field: "base", code: "invalid" });
      const headSha = head === undefined ? undefined : await this.repo.branchSha(head);
      if (!head || !headSha)
        throw validationFailed({ resource: "PullRequest", field: "head", code: "invalid" });
      if (this.openPullFor(head)) {
        throw validationFailed({
          resource: "PullRequest",
          code: "custom",
          message: `A pull request already exists for ${this.site.owner}:${head}.`,
        });
      }
      if ((await this.repo.commitsBetween(baseSha, headSha)).length === 0) {
        throw validationFailed({
          resource: "PullRequest",
          code: "custom",
          message: `No commits between ${base} and ${head}`,
        });
      }
      const at = shape.now();
      const pr: PullRecord = {
        number: this.nextNumber++,
        id: this.id(),
        title,
        body: body ?? null,
        state: "open",
        head,
        base,
        headSha,
        user: req.actor,
        createdAt: at,
        updatedAt: at,
        closedAt: null,
        mergedAt: null,
        mergeCommitSha: null,
        mergedBy: null,
        labels: [],
        draft: draft ?? false,
        maintainerCanModify: maintainer_can_modify ?? false,
      };
      this.pulls.set(pr.number, pr);
      this.pullEvents.push({ action: "opened", number: pr.number, sender: req.actor.login });
      return {
        status: 201,
        body: await this.pullBody(pr),
        headers: { location: `${shape.repoApi(this.site)}/pulls/${pr.number}` },
      };
    },

    "pulls/get": async (req) => ({ status: 200, body: await this.pullBody(this.pull(req)) }),

    "pulls/update": async (req) => {
      const pr = this.pull(req);
      const { title, body, state, base } = req.body as {
        title?: string;
        body?: string;
        state?: "open" | "closed";
        base?: string;
      };
      checkBodyLength(body);
      if (base !== undefined && !(await this.repo.branchSha(base))) {
        throw validationFailed({ resource: "PullRequest", field: "base", code: "invalid" });
      }
      if (state === "open" && pr.state === "closed") {
        if (pr.mergedAt)
          throw new ApiError(422, "Validation Failed", [
            {
              resource: "PullRequest",
              code: "custom",
              field: "state",
              message:
                "state cannot be changed. The pull request cannot be reopened because it has been merged.",
            },
          ]);
        if (!(await this.repo.branchSha(pr.head))) {
          throw validationFailed({
            resource: "PullRequest",
            code: "custom",
            field: "state",
            message: "state cannot be changed. The head branch has been deleted.",
          });
        }
        if (this.openPullFor(pr.head)) {
          throw validationFailed({
            resource: "PullRequest",
            code: "custom",
            message: `A pull request already exists for ${this.site.owner}:${pr.head}.`,
          });
        }
      }
      if (title !== undefined) pr.title = title;
      if (body !== undefined) pr.body = body;
      if (base !== undefined) pr.base = base;
      if (req.body.maintainer_can_modify !== undefined)
        pr.maintainerCanModify = Boolean(req.body.maintainer_can_modify);
      if (state !== undefined && state !== pr.state) {
        pr.state = state;
        pr.closedAt = state === "closed" ? shape.now() : null;
        if (state === "open")
          this.pullEvents.push({ action: "reopened", number: pr.number, sender: req.actor.login });
      }
      pr.updatedAt = shape.now();
      return { status: 200, body: await this.pullBody(pr) };
    },

    "pulls/request-reviewers": async (req) => {
      const pr = this.pull(req);
      const { reviewers = [], team_reviewers: teams = [] } = req.body as {
        reviewers?: string[];
        team_reviewers?: string[];
      };
      if (reviewers.includes(pr.user.login))
        throw validationFailed({
          resource: "PullRequest",
          code: "custom",
          message: "Review cannot be requested from pull request author.",
        });
      const strangers =
        reviewers.some((login) => (this.permissions.get(login) ?? "none") === "none") ||
        teams.some((slug) => !this.teams.has(slug));
      if (strangers)
        throw validationFailed({
          resource: "PullRequest",
          code: "custom",
          message: `Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the ${this.site.owner}/${this.site.repo} repository.`,
        });
      pr.requestedReviewers = [...new Set([...(pr.requestedReviewers ?? []), ...reviewers])];
      pr.requestedTeams = [...new Set([...(pr.requestedTeams ?? []), ...teams])];
      pr.updatedAt = shape.now();
      return { status: 201, body: shape.pullSimple(await this.pullContext(pr), pr) };
    },

    "pulls/list-commits": async (req) => {
      const pr = this.pull(req);
      const shas = await this.pullCommits(pr);
      const page = paginate(shas, req);
      const body = [];
      for (const sha of page.items)
        body.push(shape.commit(this.site, (await this.repo.commit(sha))!, this.accountByEmail));
      return { status: 200, body, headers: page.headers };
    },

    "pulls/merge": async (req) => this.merge(this.pull(req), req.body, req.actor),

    // Pull requests are issues too on GitHub; this double lists only the issues it holds.
    "issues/list-for-repo": async (req) => {
      const state = req.query.get("state") ?? "open";
      const wanted = (req.query.get("labels") ?? "")
        .split(",")
        .filter(Boolean)
        .map((l) => l.toLowerCase());
      const list = [...this.issues.values()]
        .filter((i) => state === "all" || i.state === state)
        .filter((i) => wanted.every((w) => i.labels.some((l) => l.toLowerCase() === w)))
        .sort((a, b) =>
          req.query.get("direction") === "asc" ? a.number - b.number : b.number - a.number,
        );
      const page = paginate(list, req);
      return {
        status: 200,
        body: page.items.map((i) => this.issueBody(i)),
        headers: page.headers,
      };
    },

    "issues/create": async (req) => {
      const { title, body, labels } = req.body as {
        title: string;
        body?: string;
        labels?: unknown[];
      };
      checkBodyLength(body);
      const names = (labels ?? []).map((item) =>
        typeof item === "string" ? item : String((item as { name: string }).name),
      );
      const record = this.openIssue({ title: String(title), body, labels: names }, req.actor);
      return {
        status: 201,
        body: this.issueBody(record),
        headers: { location: `${shape.repoApi(this.site)}/issues/${record.number}` },
      };
    },

    "issues/update": async (req) => {
      const record = this.issues.get(Number(req.params.issue_number));
      if (!record) throw notFound();
      const { title, body, state } = req.body as {
        title?: string;
        body?: string | null;
        state?: string;
      };
      checkBodyLength(body ?? undefined);
      if (title !== undefined) record.title = String(title);
      if (body !== undefined) record.body = body;
      if (state === "open" || state === "closed") {
        record.closedAt = state === "closed" ? shape.now() : null;
        record.state = state;
      }
      record.updatedAt = shape.now();
      return { status: 200, body: this.issueBody(record) };
    },

    "issues/list-comments": async (req) => {
      const issue = this.issue(req);
      const since = req.query.get("since");
      const list = this.comments.filter(
        (c) => c.issue === issue && (!since || c.updatedAt >= since),
      );
      const page = paginate(list, req);
      return {
        status: 200,
        body: page.items.map((c) => shape.comment(this.site, c)),
        headers: page.headers,
      };
    },

    "issues/create-comment": async (req) => {
      const issue = this.issue(req);
      const body = String(req.body.body);
      checkBodyLength(body);
      const at = shape.now();
      const record: CommentRecord = {
        id: this.id(),
        issue,
        body,
        user: req.actor,
        createdAt: at,
        updatedAt: at,
      };
      this.comments.push(record);
      this.pulls.get(issue)!.updatedAt = at;
      return {
        status: 201,
        body: shape.comment(this.site, record),
        headers: { location: `${shape.repoApi(this.site)}/issues/comments/${record.id}` },
      };
    },

    "issues/add-labels": async (req) => {
      const pr = this.pulls.get(this.issue(req))!;
      const raw = Array.isArray(req.body.labels) ? (req.body.labels as unknown[]) : [];
      const names = raw.map((item) =>
        typeof item === "string" ? item : String((item as { name: string }).name),
      );
      // GitHub checks every name before adding any: one refused label adds none.
      names.forEach(checkLabelName);
      for (const name of names) {
        // Adding an unknown label to an issue creates it, with GitHub's default grey.
        const record =
          this.labels.get(name.toLowerCase()) ?? this.createLabel(name, "ededed", null);
        if (!pr.labels.includes(record.name)) pr.labels.push(record.name);
      }
      pr.updatedAt = shape.now();
      return { status: 200, body: this.labelsOf(pr).map((l) => shape.label(this.site, l)) };
    },

    "issues/get-label": async (req) => {
      const record = this.labels.get(req.params.name!.toLowerCase());
      if (!record) throw notFound();
      return { status: 200, body: shape.label(this.site, record) };
    },

    "issues/create-label": async (req) => {
      const { name, color, description } = req.body as {
        name: string;
        color?: string;
        description?: string;
      };
      checkLabelName(name);
      if (this.labels.has(name.toLowerCase()))
        throw validationFailed({ resource: "Label", code: "already_exists", field: "name" });
      if (color !== undefined && !/^[0-9a-fA-F]{6}$/.test(color))
        throw validationFailed({ resource: "Label", code: "invalid", field: "color" });
      return {
        status: 201,
        body: shape.label(
          this.site,
          this.createLabel(name, (color ?? "ededed").toLowerCase(), description ?? null),
        ),
      };
    },

    "git/get-ref": async (req) => {
      const ref = `refs/${req.params.ref}`;
      const sha = await this.repo.resolve(ref);
      if (!sha || !/^refs\/(heads|tags)\/./.test(ref)) throw notFound();
      return {
        status: 200,
        body: shape.gitRef(this.site, ref, sha, (await this.repo.objectType(sha)) ?? "commit"),
      };
    },

    "repos/get-branch": async (req) => {
      const name = req.params.branch!;
      const sha = await this.repo.branchSha(name);
      if (!sha) throw new ApiError(404, "Branch not found");
      const head = shape.commit(this.site, (await this.repo.commit(sha))!, this.accountByEmail);
      return { status: 200, body: shape.branch(this.site, name, head) };
    },

    "git/delete-ref": async (req) => {
      const ref = `refs/${req.params.ref}`;
      if (!(await this.repo.resolve(ref))) throw new ApiError(422, "Reference does not exist");
      await this.repo.deleteRef(ref);
      this.touch();
      await this.sync();
      return { status: 204 };
    },

    "repos/compare-commits-with-basehead": async (req) => {
      const m = /^(.+?)\.\.\.(.+)$/.exec(req.params.basehead!);
      if (!m) throw notFound();
      const baseSha = await this.commitish(m[1]!);
      const headSha = await this.commitish(m[2]!);
      const mergeBase = await this.repo.mergeBase(baseSha, headSha);
      if (!mergeBase) throw notFound();
      const ahead = await this.repo.commitsBetween(baseSha, headSha);
      const behind = await this.repo.commitsBetween(headSha, baseSha);
      const status =
        ahead.length && behind.length
          ? "diverged"
          : ahead.length
            ? "ahead"
            : behind.length
              ? "behind"
              : "identical";
      const page = paginate(ahead, req);
      const commits = [];
      for (const sha of page.items)
        commits.push(shape.commit(this.site, (await this.repo.commit(sha))!, this.accountByEmail));
      const web = `${this.site.web}/${this.site.owner}/${this.site.repo}/compare/${req.params.basehead}`;
      return {
        status: 200,
        headers: page.headers,
        body: {
          url: `${shape.repoApi(this.site)}/compare/${req.params.basehead}`,
          html_url: web,
          permalink_url: `${this.site.web}/${this.site.owner}/${this.site.repo}/compare/${baseSha}...${headSha}`,
          diff_url: `${web}.diff`,
          patch_url: `${web}.patch`,
          base_commit: shape.commit(
            this.site,
            (await this.repo.commit(baseSha))!,
            this.accountByEmail,
          ),
          merge_base_commit: shape.commit(
            this.site,
            (await this.repo.commit(mergeBase))!,
            this.accountByEmail,
          ),
          status,
          ahead_by: ahead.length,
          behind_by: behind.length,
          total_commits: ahead.length,
          commits,
          files: (await this.repo.changedFiles(mergeBase, headSha)).map((f) =>
            shape.diffEntry(this.site, headSha, f),
          ),
        },
      };
    },

    "repos/get-collaborator-permission-level": async (req) => {
      const login = req.params.username!;
      const permission = this.permissions.get(login) ?? "none";
      const account = this.account(login);
      const legacy =
        permission === "maintain" ? "write" : permission === "triage" ? "read" : permission;
      return {
        status: 200,
        body: {
          permission: legacy,
          role_name: permission,
          user: {
            ...shape.user(this.site, account),
            role_name: permission,
            permissions: rolePermissions(permission),
          },
        },
      };
    },

    "git/create-blob": async (req) => {
      const { content, encoding } = req.body as { content: string; encoding?: string };
      if (encoding !== undefined && encoding !== "utf-8" && encoding !== "base64") {
        throw validationFailed({ resource: "Blob", code: "invalid", field: "encoding" });
      }
      const sha = await this.repo.writeBlob(
        this.withinBlobLimit(Buffer.from(content, encoding === "base64" ? "base64" : "utf8")),
      );
      return {
        status: 201,
        body: { sha, url: `${shape.repoApi(this.site)}/git/blobs/${sha}` },
        headers: { location: `${shape.repoApi(this.site)}/git/blobs/${sha}` },
      };
    },

    "git/get-blob": async (req) => {
      const sha = req.params.file_sha!;
      const data = /^[0-9a-f]{40}$/.test(sha) ? await this.repo.blob(sha) : undefined;
      if (!data) throw notFound();
      return { status: 200, body: shape.blob(this.site, sha, data) };
    },

    "git/get-commit": async (req) => {
      const info = await this.repo.commit(req.params.commit_sha!);
      if (!info) throw notFound();
      return { status: 200, body: shape.gitCommit(this.site, info) };
    },

    "git/get-tree": async (req) => {
      const recursive =
        req.query.has("recursive") && !["0", "false"].includes(req.query.get("recursive")!);
      const tree = await this.repo.tree(req.params.tree_sha!, recursive);
      if (!tree) throw notFound();
      return { status: 200, body: shape.gitTree(this.site, tree.sha, tree.entries) };
    },

    "git/create-tree": async (req) => {
      const { tree, base_tree } = req.body as { tree: TreeChange[]; base_tree?: string };
      if (base_tree !== undefined && !(await this.repo.resolve(`${base_tree}^{tree}`))) {
        throw new ApiError(422, "Invalid tree info: base_tree is not a tree");
      }
      for (const entry of tree) {
        if (entry.content !== undefined && entry.sha !== undefined) {
          throw new ApiError(422, "Invalid tree info: content and sha cannot both be given");
        }
        if (entry.content !== undefined) this.withinBlobLimit(Buffer.from(entry.content, "utf8"));
      }
      const sha = await this.refusalAs422(() => this.repo.writeTree(tree, base_tree));
      const written = (await this.repo.tree(sha, false))!;
      return {
        status: 201,
        body: shape.gitTree(this.site, sha, written.entries),
        headers: { location: `${shape.repoApi(this.site)}/git/trees/${sha}` },
      };
    },

    "git/create-commit": async (req) => {
      const { message, tree, parents, author, committer } = req.body as {
        message: string;
        tree: string;
        parents?: string[];
        author?: GitIdentity;
        committer?: GitIdentity;
      };
      if ((await this.repo.objectType(tree)) !== "tree")
        throw new ApiError(422, "Tree SHA does not exist");
      for (const parent of parents ?? []) {
        if ((await this.repo.objectType(parent)) !== "commit")
          throw new ApiError(422, "Parent SHA does not exist or is not a commit object");
      }
      const who = author ?? committer ?? this.identity(req.actor);
      const sha = await this.repo.writeCommit(tree, parents ?? [], message, who, committer ?? who);
      return {
        status: 201,
        body: shape.gitCommit(this.site, (await this.repo.commit(sha))!),
        headers: { location: `${shape.repoApi(this.site)}/git/commits/${sha}` },
      };
    },

    "git/create-ref": async (req) => {
      const { ref, sha } = req.body as { ref: string; sha: string };
      if (!/^refs\/[^/]+\/./.test(ref))
        throw new ApiError(
          422,
          "Reference name must start with 'refs/' and have at least two slashes.",
        );
      if (!(await this.repo.objectType(sha))) throw new ApiError(422, "Object does not exist");
      if (await this.repo.resolve(ref)) throw new ApiError(422, "Reference already exists");
      await this.refusalAs422(() => this.repo.createRef(ref, sha), "Reference update failed");
      this.touch();
      return {
        status: 201,
        body: shape.gitRef(this.site, ref, sha),
        headers: { location: `${shape.repoApi(this.site)}/git/${ref}` },
      };
    },

    "git/update-ref": async (req) => {
      const ref = `refs/${req.params.ref}`;
      const { sha, force } = req.body as { sha: string; force?: boolean };
      const current = await this.repo.resolve(ref);
      if (!current) throw new ApiError(422, "Reference does not exist");
      if ((await this.repo.objectType(sha)) !== "commit")
        throw new ApiError(422, "Object does not exist");
      if (!force && !(await this.repo.isAncestor(current, sha)))
        throw new ApiError(422, "Update is not a fast forward");
      await this.refusalAs422(
        () => this.repo.updateRef(ref, sha, current),
        "Reference cannot be updated",
      );
      this.touch();
      await this.sync();
      this.headMoved(ref, req.actor);
      return { status: 200, body: shape.gitRef(this.site, ref, sha) };
    },

    "repos/get-content": async (req) => {
      const ref = req.query.get("ref") ?? this.site.defaultBranch;
      const commitSha = await this.commitish(ref);
      const path = req.params.path!.replace(/\/+$/, "");
      const listing = await this.repo.tree(`${commitSha}:${path}`, false);
      if (listing) {
        const entries = listing.entries.map((e) => ({ ...e, path: `${path}/${e.path}` }));
        return { status: 200, body: entries.map((e) => shape.content(this.site, ref, e)) };
      }
      const parent = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
      const dir = await this.repo.tree(parent ? `${commitSha}:${parent}` : commitSha, false);
      const name = path.slice(path.lastIndexOf("/") + 1);
      const entry = dir?.entries.find((e) => e.path === name);
      if (!entry) throw notFound();
      const data = entry.type === "blob" ? await this.repo.blob(entry.sha) : undefined;
      const body = shape.content(this.site, ref, { ...entry, path }, data);
      if (entry.mode === "120000" && data) body.target = data.toString("utf8");
      return { status: 200, body };
    },
  };

  /** `bytes`, unless over the blob limit: then GitHub's refusal (422). */
  private withinBlobLimit(bytes: Buffer): Buffer {
    if (bytes.length <= this.maxBlobBytes) return bytes;
    throw validationFailed({
      resource: "Blob",
      code: "custom",
      field: "content",
      message: `content is ${bytes.length} bytes, over the ${this.maxBlobBytes} a blob may be`,
    });
  }

  /** Merges a PR into its base in the bare repo, as the merge button does. */
  async merge(pr: PullRecord, options: MergeOptions, by: Account): Promise<Reply> {
    if (pr.state !== "open") throw new ApiError(405, "Pull Request is not mergeable");
    const head = await this.repo.branchSha(pr.head);
    const base = await this.repo.branchSha(pr.base);
    if (!head || !base) throw new ApiError(405, "Pull Request is not mergeable");
    if (options.sha !== undefined && options.sha !== head) {
      throw new ApiError(409, "Head branch was modified. Review and try the merge again.");
    }
    const method = options.merge_method ?? "merge";
    const committer = { name: "GitHub", email: "noreply@github.com" };
    let sha: string;
    if (method === "rebase") {
      // Replaying commits is out of scope: a rebase merge here only fast-forwards.
      if (!(await this.repo.isAncestor(base, head)))
        throw new ApiError(405, "This branch can't be rebased");
      sha = head;
    } else {
      const tree = await this.repo.mergedTree(base, head);
      if (!tree) throw new ApiError(405, "Pull Request is not mergeable");
      const title =
        options.commit_title ??
        (method === "squash"
          ? `${pr.title} (#${pr.number})`
          : `Merge pull request #${pr.number} from ${this.site.owner}/${pr.head}`);
      const message = options.commit_message ?? (method === "squash" ? "" : pr.title);
      const parents = method === "squash" ? [base] : [base, head];
      sha = await this.repo.writeCommit(
        tree,
        parents,
        message ? `${title}\n\n${message}` : title,
        this.identity(by),
        committer,
      );
    }
    await this.refusalAs422(
      () => this.repo.updateRef(`refs/heads/${pr.base}`, sha, base),
      "Base branch was modified",
    );
    const at = shape.now();
    Object.assign(pr, {
      state: "closed",
      closedAt: at,
      mergedAt: at,
      updatedAt: at,
      mergeCommitSha: sha,
      mergedBy: by,
      headSha: head,
    });
    this.touch();
    return {
      status: 200,
      body: { sha, merged: true, message: "Pull Request successfully merged" },
    };
  }

  createLabel(name: string, color: string, description: string | null): LabelRecord {
    const record: LabelRecord = { id: this.id(), name, color, description, default: false };
    this.labels.set(name.toLowerCase(), record);
    return record;
  }

  openCount(): number {
    return [...this.pulls.values()].filter((pr) => pr.state === "open").length;
  }

  private openPullFor(head: string): PullRecord | undefined {
    return [...this.pulls.values()].find((pr) => pr.state === "open" && pr.head === head);
  }

  /** `branch` or `owner:branch`; a fork's owner is not something this double has. */
  private headBranch(head: string): string | undefined {
    if (!head.includes(":")) return head;
    const [owner, branch] = splitOnce(head, ":");
    return owner === this.site.owner ? branch : undefined;
  }

  private pull(req: Request): PullRecord {
    const pr = this.pulls.get(Number(req.params.pull_number));
    if (!pr) throw notFound();
    return pr;
  }

  /** An issue opened by `by`, its labels created as GitHub creates an unknown one. */
  openIssue(
    input: { title: string; body?: string | undefined; labels: readonly string[] },
    by: shape.Account,
  ): shape.IssueRecord {
    const at = shape.now();
    const record: shape.IssueRecord = {
      number: this.nextNumber++,
      id: this.id(),
      title: input.title,
      body: input.body ?? null,
      state: "open",
      user: by,
      labels: [],
      createdAt: at,
      updatedAt: at,
      closedAt: null,
    };
    for (const name of input.labels) {
      checkLabelName(name);
      const label = this.labels.get(name.toLowerCase()) ?? this.createLabel(name, "ededed", null);
      if (!record.labels.includes(label.name)) record.labels.push(label.name);
    }
    this.issues.set(record.number, record);
    return record;
  }

  /** Only pull requests exist here, so an issue number must be one of them. */
  private issue(req: Request): number {
    const number = Number(req.params.issue_number);
    if (!this.pulls.has(number)) throw notFound();
    return number;
  }

  private issueBody(record: shape.IssueRecord): Record<string, unknown> {
    const labels = record.labels
      .map((name) => this.labels.get(name.toLowerCase()))
      .filter((l): l is LabelRecord => l !== undefined);
    const comments = this.comments.filter((c) => c.issue === record.number).length;
    return shape.issue(this.site, record, labels, comments);
  }

  private labelsOf(pr: PullRecord): LabelRecord[] {
    return pr.labels
      .map((name) => this.labels.get(name.toLowerCase()))
      .filter((l): l is LabelRecord => l !== undefined);
  }

  /** A branch, tag, `owner:branch` or sha, resolved to a commit; 404 when it names nothing. */
  private async commitish(name: string): Promise<string> {
    const local = name.includes(":") ? splitOnce(name, ":") : undefined;
    if (local && local[0] !== this.site.owner) throw notFound();
    const ref = local ? local[1] : name;
    for (const candidate of [`refs/heads/${ref}`, `refs/tags/${ref}`, ref]) {
      const sha = /^-/.test(candidate)
        ? undefined
        : await this.repo.resolve(`${candidate}^{commit}`);
      if (sha) return sha;
    }
    throw notFound();
  }

  private async pullCommits(pr: PullRecord): Promise<string[]> {
    const base = pr.mergedAt
      ? (await this.repo.commit(pr.mergeCommitSha!))?.parents[0]
      : await this.repo.branchSha(pr.base);
    return base ? this.repo.commitsBetween(base, pr.headSha) : [];
  }

  private async pullContext(pr: PullRecord): Promise<shape.PullContext> {
    return {
      site: this.site,
      owner: this.owner,
      labels: this.labelsOf(pr),
      repository: shape.repository(this.site, this.owner, this.openCount(), this.lastPush),
      baseSha: (await this.repo.branchSha(pr.base)) ?? pr.headSha,
      reviewers: (pr.requestedReviewers ?? []).map((login) => this.account(login)),
      teams: (pr.requestedTeams ?? []).map((slug) => this.teams.get(slug)!),
    };
  }

  async pullBody(pr: PullRecord): Promise<Record<string, unknown>> {
    const ctx = await this.pullContext(pr);
    const commits = await this.pullCommits(pr);
    const mergeBase =
      pr.state === "open" ? await this.repo.mergeBase(ctx.baseSha, pr.headSha) : undefined;
    const files = mergeBase ? await this.repo.changedFiles(mergeBase, pr.headSha) : [];
    return shape.pull(ctx, pr, {
      mergeable:
        pr.state === "open"
          ? (await this.repo.mergedTree(ctx.baseSha, pr.headSha)) !== undefined
          : null,
      commits: commits.length,
      additions: files.reduce((n, f) => n + f.additions, 0),
      deletions: files.reduce((n, f) => n + f.deletions, 0),
      changedFiles: files.length,
      comments: this.comments.filter((c) => c.issue === pr.number).length,
    });
  }

  private async refusalAs422<T>(work: () => Promise<T>, message?: string): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof GitRefusal)
        throw new ApiError(422, message ?? err.message.replace(/^git \S+: (fatal|error): /, ""));
      throw err;
    }
  }
}

export interface MergeOptions {
  commit_title?: string;
  commit_message?: string;
  sha?: string;
  merge_method?: "merge" | "squash" | "rebase";
}

function noreplyEmail(account: Account): string {
  return `${account.id}+${account.login}@users.noreply.github.com`;
}

/** GitHub's limit on a label's name: a longer one is refused (422), on every route that names one. */
const MAX_LABEL_NAME = 50;

function checkLabelName(name: string): void {
  if (name.length > MAX_LABEL_NAME)
    throw validationFailed({ resource: "Label", code: "invalid", field: "name" });
}

function checkBodyLength(body: string | undefined): void {
  if (body !== undefined && body.length > MAX_BODY) {
    throw validationFailed({
      resource: "Issue",
      code: "custom",
      field: "body",
      message: `body is too long (maximum is ${MAX_BODY} characters)`,
    });
  }
}

function rolePermissions(permission: Permission): Record<string, boolean> {
  const rank = ["none", "read", "triage", "write", "maintain", "admin"].indexOf(permission);
  return {
    pull: rank >= 1,
    triage: rank >= 2,
    push: rank >= 3,
    maintain: rank >= 4,
    admin: rank >= 5,
  };
}

function splitOnce(text: string, sep: string): [string, string] {
  const i = text.indexOf(sep);
  return [text.slice(0, i), text.slice(i + sep.length)];
}

/**
 * GitHub's page/per_page with a Link header (first, prev, next, last) built from the request URL.
 */
function paginate<T>(items: T[], req: Request): { items: T[]; headers: Record<string, string> } {
  const perPage = Math.min(Number(req.query.get("per_page") ?? 30) || 30, 100);
  const page = Math.max(Number(req.query.get("page") ?? 1) || 1, 1);
  const last = Math.max(Math.ceil(items.length / perPage), 1);
  const link = (n: number, rel: string): string => {
    const url = new URL(req.url);
    url.searchParams.set("per_page", String(perPage));
    url.searchParams.set("page", String(n));
    return `<${url.toString()}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (page > 1) links.push(link(page - 1, "prev"));
  if (page < last) links.push(link(page + 1, "next"), link(last, "last"));
  if (page > 1) links.push(link(1, "first"));
  return {
    items: items.slice((page - 1) * perPage, page * perPage),
    headers: links.length ? { link: links.join(", ") } : {},
  };
}
