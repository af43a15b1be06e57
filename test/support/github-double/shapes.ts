// GitHub's JSON shapes, built from the double's records and the bare repo. The OpenAPI check on
// every response keeps these honest: a field GitHub requires and this file forgets fails a test.
import type { CommitInfo, FileChange, TreeEntry } from "./bare-repo.js";

export interface Site {
  /** REST API root, e.g. http://127.0.0.1:PORT */
  api: string;
  /** Web and git root (the git server), e.g. http://127.0.0.1:PORT */
  web: string;
  owner: string;
  repo: string;
  repoId: number;
  defaultBranch: string;
  createdAt: string;
}

export interface Account {
  login: string;
  id: number;
  type: "User" | "Bot" | "Organization";
}

export interface PullRecord {
  number: number;
  id: number;
  title: string;
  body: string | null;
  state: "open" | "closed";
  head: string;
  base: string;
  headSha: string;
  user: Account;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  mergedAt: string | null;
  mergeCommitSha: string | null;
  mergedBy: Account | null;
  labels: string[];
  draft: boolean;
  maintainerCanModify: boolean;
  /** Logins and team slugs asked to review. */
  requestedReviewers?: string[];
  requestedTeams?: string[];
}

export interface CommentRecord {
  id: number;
  issue: number;
  body: string;
  user: Account;
  createdAt: string;
  updatedAt: string;
}

export interface IssueRecord {
  number: number;
  id: number;
  title: string;
  body: string | null;
  state: "open" | "closed";
  user: Account;
  labels: string[];
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
}

export interface LabelRecord {
  id: number;
  name: string;
  color: string;
  description: string | null;
  default: boolean;
}

type Json = Record<string, unknown>;

export function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

export function nodeId(kind: string, id: number): string {
  return Buffer.from(`${kind}:${id}`).toString("base64url");
}

export function repoApi(site: Site): string {
  return `${site.api}/repos/${site.owner}/${site.repo}`;
}

function repoWeb(site: Site): string {
  return `${site.web}/${site.owner}/${site.repo}`;
}

export function user(site: Site, account: Account): Json {
  const url = `${site.api}/users/${account.login}`;
  return {
    login: account.login,
    id: account.id,
    node_id: nodeId("User", account.id),
    avatar_url: `${site.web}/avatars/u/${account.id}`,
    gravatar_id: "",
    url,
    html_url: `${site.web}/${account.login}`,
    followers_url: `${url}/followers`,
    following_url: `${url}/following{/other_user}`,
    gists_url: `${url}/gists{/gist_id}`,
    starred_url: `${url}/starred{/owner}{/repo}`,
    subscriptions_url: `${url}/subscriptions`,
    organizations_url: `${url}/orgs`,
    repos_url: `${url}/repos`,
    events_url: `${url}/events{/privacy}`,
    received_events_url: `${url}/received_events`,
    type: account.type,
    user_view_type: "public",
    site_admin: false,
  };
}

/**
 * GET /user's `public-user` shape: what GitHub answers a user's token about its own account (an
 * App's or Actions' token gets 403 there instead).
 */
export function publicUser(site: Site, account: Account, createdAt: string): Json {
  return {
    ...(user(site, account) as Record<string, Json>),
    name: null,
    company: null,
    blog: "",
    location: null,
    email: null,
    hireable: null,
    bio: null,
    public_repos: 0,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: createdAt,
    updated_at: createdAt,
  };
}

/**
 * The `repository` shape (inside pulls); `fullRepository` adds what GET /repos/{owner}/{repo} has.
 */
export function repository(site: Site, owner: Account, openIssues: number, pushedAt: string): Json {
  const api = repoApi(site);
  const web = repoWeb(site);
  return {
    id: site.repoId,
    node_id: nodeId("Repository", site.repoId),
    name: site.repo,
    full_name: `${site.owner}/${site.repo}`,
    owner: user(site, owner),
    private: true,
    html_url: web,
    description: null,
    fork: false,
    url: api,
    archive_url: `${api}/{archive_format}{/ref}`,
    assignees_url: `${api}/assignees{/user}`,
    blobs_url: `${api}/git/blobs{/sha}`,
    branches_url: `${api}/branches{/branch}`,
    collaborators_url: `${api}/collaborators{/collaborator}`,
    comments_url: `${api}/comments{/number}`,
    commits_url: `${api}/commits{/sha}`,
    compare_url: `${api}/compare/{base}...{head}`,
    contents_url: `${api}/contents/{+path}`,
    contributors_url: `${api}/contributors`,
    deployments_url: `${api}/deployments`,
    downloads_url: `${api}/downloads`,
    events_url: `${api}/events`,
    forks_url: `${api}/forks`,
    git_commits_url: `${api}/git/commits{/sha}`,
    git_refs_url: `${api}/git/refs{/sha}`,
    git_tags_url: `${api}/git/tags{/sha}`,
    git_url: `${web.replace(/^https?:/, "git:")}.git`,
    issue_comment_url: `${api}/issues/comments{/number}`,
    issue_events_url: `${api}/issues/events{/number}`,
    issues_url: `${api}/issues{/number}`,
    keys_url: `${api}/keys{/key_id}`,
    labels_url: `${api}/labels{/name}`,
    languages_url: `${api}/languages`,
    merges_url: `${api}/merges`,
    milestones_url: `${api}/milestones{/number}`,
    notifications_url: `${api}/notifications{?since,all,participating}`,
    pulls_url: `${api}/pulls{/number}`,
    releases_url: `${api}/releases{/id}`,
    ssh_url: `git@${new URL(site.web).hostname}:${site.owner}/${site.repo}.git`,
    stargazers_url: `${api}/stargazers`,
    statuses_url: `${api}/statuses/{sha}`,
    subscribers_url: `${api}/subscribers`,
    subscription_url: `${api}/subscription`,
    tags_url: `${api}/tags`,
    teams_url: `${api}/teams`,
    trees_url: `${api}/git/trees{/sha}`,
    clone_url: `${web}.git`,
    mirror_url: null,
    hooks_url: `${api}/hooks`,
    svn_url: web,
    homepage: null,
    language: null,
    forks: 0,
    forks_count: 0,
    stargazers_count: 0,
    watchers_count: 0,
    watchers: 0,
    size: 0,
    default_branch: site.defaultBranch,
    open_issues: openIssues,
    open_issues_count: openIssues,
    is_template: false,
    topics: [],
    has_issues: true,
    has_projects: false,
    has_wiki: false,
    has_pages: false,
    has_downloads: true,
    has_discussions: false,
    archived: false,
    disabled: false,
    visibility: "private",
    license: null,
    pushed_at: pushedAt,
    created_at: site.createdAt,
    updated_at: pushedAt,
    allow_forking: false,
    web_commit_signoff_required: false,
  };
}

export function fullRepository(
  site: Site,
  owner: Account,
  openIssues: number,
  pushedAt: string,
  permission: string,
): Json {
  return {
    ...repository(site, owner, openIssues, pushedAt),
    permissions: {
      admin: permission === "admin",
      maintain: ["admin", "maintain"].includes(permission),
      push: ["admin", "maintain", "write"].includes(permission),
      triage: permission !== "read" && permission !== "none",
      pull: permission !== "none",
    },
    allow_merge_commit: true,
    allow_squash_merge: true,
    allow_rebase_merge: true,
    allow_auto_merge: false,
    delete_branch_on_merge: false,
    allow_update_branch: false,
    network_count: 0,
    subscribers_count: 0,
  };
}

export function label(site: Site, record: LabelRecord): Json {
  return {
    id: record.id,
    node_id: nodeId("Label", record.id),
    url: `${repoApi(site)}/labels/${encodeURIComponent(record.name)}`,
    name: record.name,
    color: record.color,
    description: record.description,
    default: record.default,
  };
}

export function comment(site: Site, record: CommentRecord): Json {
  return {
    id: record.id,
    node_id: nodeId("IssueComment", record.id),
    url: `${repoApi(site)}/issues/comments/${record.id}`,
    html_url: `${repoWeb(site)}/pull/${record.issue}#issuecomment-${record.id}`,
    issue_url: `${repoApi(site)}/issues/${record.issue}`,
    body: record.body,
    user: user(site, record.user),
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    author_association: "MEMBER",
  };
}

/** The `issue` shape of the issues endpoints (an issue that is not a pull request). */
export function issue(
  site: Site,
  record: IssueRecord,
  labels: LabelRecord[],
  comments: number,
): Json {
  const self = `${repoApi(site)}/issues/${record.number}`;
  return {
    id: record.id,
    node_id: nodeId("Issue", record.id),
    url: self,
    repository_url: repoApi(site),
    labels_url: `${self}/labels{/name}`,
    comments_url: `${self}/comments`,
    events_url: `${self}/events`,
    html_url: `${repoWeb(site)}/issues/${record.number}`,
    number: record.number,
    state: record.state,
    state_reason: null,
    title: record.title,
    body: record.body,
    user: user(site, record.user),
    labels: labels.map((l) => label(site, l)),
    assignee: null,
    assignees: [],
    milestone: null,
    locked: false,
    active_lock_reason: null,
    comments,
    closed_at: record.closedAt,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    author_association: "MEMBER",
  };
}

export interface PullContext {
  site: Site;
  owner: Account;
  labels: LabelRecord[];
  repository: Json;
  baseSha: string;
  /** Users and teams asked to review. */
  reviewers?: Account[];
  teams?: TeamRecord[];
}

/** A team of the repository's organization, by slug. */
export interface TeamRecord {
  slug: string;
  id: number;
}

/** The `team` shape: a team GitHub names in a pull request's requested teams. */
export function team(site: Site, record: TeamRecord): Json {
  const url = `${site.api}/organizations/1/team/${record.id}`;
  return {
    id: record.id,
    node_id: nodeId("Team", record.id),
    url,
    html_url: `${site.web}/orgs/${site.owner}/teams/${record.slug}`,
    name: record.slug,
    slug: record.slug,
    description: null,
    privacy: "closed",
    notification_setting: "notifications_enabled",
    permission: "push",
    members_url: `${url}/members{/member}`,
    repositories_url: `${url}/repos`,
    type: "organization",
    parent: null,
  };
}

/** The `pull-request-simple` shape of list results. */
export function pullSimple(ctx: PullContext, pr: PullRecord): Json {
  const api = repoApi(ctx.site);
  const web = repoWeb(ctx.site);
  const self = `${api}/pulls/${pr.number}`;
  const html = `${web}/pull/${pr.number}`;
  const side = (ref: string, sha: string): Json => ({
    label: `${ctx.site.owner}:${ref}`,
    ref,
    sha,
    user: user(ctx.site, ctx.owner),
    repo: ctx.repository,
  });
  return {
    url: self,
    id: pr.id,
    node_id: nodeId("PullRequest", pr.id),
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    issue_url: `${api}/issues/${pr.number}`,
    commits_url: `${self}/commits`,
    review_comments_url: `${self}/comments`,
    review_comment_url: `${api}/pulls/comments{/number}`,
    comments_url: `${api}/issues/${pr.number}/comments`,
    statuses_url: `${api}/statuses/${pr.headSha}`,
    number: pr.number,
    state: pr.state,
    locked: false,
    title: pr.title,
    user: user(ctx.site, pr.user),
    body: pr.body,
    // The description types a pull request's label description as a string, never null.
    labels: ctx.labels.map((l) => label(ctx.site, { ...l, description: l.description ?? "" })),
    milestone: null,
    active_lock_reason: null,
    created_at: pr.createdAt,
    updated_at: pr.updatedAt,
    closed_at: pr.closedAt,
    merged_at: pr.mergedAt,
    merge_commit_sha: pr.mergeCommitSha,
    assignee: null,
    assignees: [],
    requested_reviewers: (ctx.reviewers ?? []).map((account) => user(ctx.site, account)),
    requested_teams: (ctx.teams ?? []).map((record) => team(ctx.site, record)),
    head: side(pr.head, pr.headSha),
    base: side(pr.base, ctx.baseSha),
    _links: {
      self: { href: self },
      html: { href: html },
      issue: { href: `${api}/issues/${pr.number}` },
      comments: { href: `${api}/issues/${pr.number}/comments` },
      review_comments: { href: `${self}/comments` },
      review_comment: { href: `${api}/pulls/comments{/number}` },
      commits: { href: `${self}/commits` },
      statuses: { href: `${api}/statuses/${pr.headSha}` },
    },
    author_association: "MEMBER",
    auto_merge: null,
    draft: pr.draft,
  };
}

export interface PullStats {
  mergeable: boolean | null;
  commits: number;
  additions: number;
  deletions: number;
  changedFiles: number;
  comments: number;
}

/** The full `pull-request` shape of GET, POST and PATCH. */
export function pull(ctx: PullContext, pr: PullRecord, stats: PullStats): Json {
  const state = pr.state === "closed" ? "unknown" : stats.mergeable === false ? "dirty" : "clean";
  return {
    ...pullSimple(ctx, pr),
    merged: pr.mergedAt !== null,
    mergeable: pr.state === "open" ? stats.mergeable : null,
    rebaseable: pr.state === "open" ? stats.mergeable : null,
    mergeable_state: state,
    merged_by: pr.mergedBy ? user(ctx.site, pr.mergedBy) : null,
    comments: stats.comments,
    review_comments: 0,
    maintainer_can_modify: pr.maintainerCanModify,
    commits: stats.commits,
    additions: stats.additions,
    deletions: stats.deletions,
    changed_files: stats.changedFiles,
  };
}

function gitUser(identity: { name: string; email: string; date: string }): Json {
  return { name: identity.name, email: identity.email, date: identity.date };
}

const UNSIGNED = {
  verified: false,
  reason: "unsigned",
  signature: null,
  payload: null,
  verified_at: null,
};

/** The Git Data API's `git-commit` shape. */
export function gitCommit(site: Site, c: CommitInfo): Json {
  const api = repoApi(site);
  return {
    sha: c.sha,
    node_id: nodeId("Commit", parseInt(c.sha.slice(0, 8), 16)),
    url: `${api}/git/commits/${c.sha}`,
    html_url: `${repoWeb(site)}/commit/${c.sha}`,
    author: gitUser(c.author),
    committer: gitUser(c.committer),
    message: c.message,
    tree: { sha: c.tree, url: `${api}/git/trees/${c.tree}` },
    parents: c.parents.map((p) => ({
      sha: p,
      url: `${api}/git/commits/${p}`,
      html_url: `${repoWeb(site)}/commit/${p}`,
    })),
    verification: UNSIGNED,
  };
}

/** The REST `commit` shape (pull commits, compare, branches); accounts are matched by email. */
export function commit(
  site: Site,
  c: CommitInfo,
  accountOf: (email: string) => Account | undefined,
  files?: FileChange[],
): Json {
  const api = repoApi(site);
  const author = accountOf(c.author.email);
  const committer = accountOf(c.committer.email);
  const out: Json = {
    url: `${api}/commits/${c.sha}`,
    sha: c.sha,
    node_id: nodeId("Commit", parseInt(c.sha.slice(0, 8), 16)),
    html_url: `${repoWeb(site)}/commit/${c.sha}`,
    comments_url: `${api}/commits/${c.sha}/comments`,
    commit: {
      url: `${api}/git/commits/${c.sha}`,
      author: gitUser(c.author),
      committer: gitUser(c.committer),
      message: c.message.replace(/\n$/, ""),
      tree: { sha: c.tree, url: `${api}/git/trees/${c.tree}` },
      comment_count: 0,
      verification: UNSIGNED,
    },
    author: author ? user(site, author) : null,
    committer: committer ? user(site, committer) : null,
    parents: c.parents.map((p) => ({
      sha: p,
      url: `${api}/commits/${p}`,
      html_url: `${repoWeb(site)}/commit/${p}`,
    })),
  };
  if (files) {
    const additions = files.reduce((n, f) => n + f.additions, 0);
    const deletions = files.reduce((n, f) => n + f.deletions, 0);
    out.stats = { additions, deletions, total: additions + deletions };
    out.files = files.map((f) => diffEntry(site, c.sha, f));
  }
  return out;
}

export function diffEntry(site: Site, sha: string, f: FileChange): Json {
  const path = f.filename.split("/").map(encodeURIComponent).join("/");
  const out: Json = {
    sha: f.sha,
    filename: f.filename,
    status: f.status,
    additions: f.additions,
    deletions: f.deletions,
    changes: f.additions + f.deletions,
    blob_url: `${repoWeb(site)}/blob/${sha}/${path}`,
    raw_url: `${repoWeb(site)}/raw/${sha}/${path}`,
    contents_url: `${repoApi(site)}/contents/${path}?ref=${sha}`,
  };
  if (f.patch !== undefined) out.patch = f.patch;
  if (f.previousFilename) out.previous_filename = f.previousFilename;
  return out;
}

export function gitRef(site: Site, ref: string, sha: string, type = "commit"): Json {
  return {
    ref,
    node_id: nodeId("Ref", parseInt(sha.slice(0, 8), 16)),
    url: `${repoApi(site)}/git/${ref}`,
    object: { type, sha, url: `${repoApi(site)}/git/${type}s/${sha}` },
  };
}

export function gitTree(site: Site, sha: string, entries: TreeEntry[]): Json {
  const api = repoApi(site);
  return {
    sha,
    url: `${api}/git/trees/${sha}`,
    tree: entries.map((e) => {
      const entry: Json = { path: e.path, mode: e.mode, type: e.type, sha: e.sha };
      if (e.size !== undefined) entry.size = e.size;
      if (e.type !== "commit") entry.url = `${api}/git/${e.type}s/${e.sha}`;
      return entry;
    }),
    truncated: false,
  };
}

export function branch(site: Site, name: string, head: Json): Json {
  const api = repoApi(site);
  return {
    name,
    commit: head,
    _links: {
      self: `${api}/branches/${encodeURIComponent(name)}`,
      html: `${repoWeb(site)}/tree/${name}`,
    },
    protected: false,
    protection: {
      enabled: false,
      required_status_checks: { enforcement_level: "off", contexts: [], checks: [] },
    },
    protection_url: `${api}/branches/${encodeURIComponent(name)}/protection`,
  };
}

/** One entry of the contents API: a file with its base64 content, or a directory listing item. */
export function content(site: Site, ref: string, entry: TreeEntry, data?: Buffer): Json {
  const api = repoApi(site);
  const path = entry.path.split("/").map(encodeURIComponent).join("/");
  const self = `${api}/contents/${path}?ref=${encodeURIComponent(ref)}`;
  const type =
    entry.type === "tree"
      ? "dir"
      : entry.type === "commit"
        ? "submodule"
        : entry.mode === "120000"
          ? "symlink"
          : "file";
  const git = `${api}/git/${entry.type === "tree" ? "trees" : "blobs"}/${entry.sha}`;
  const html = `${repoWeb(site)}/${type === "dir" ? "tree" : "blob"}/${ref}/${path}`;
  const out: Json = {
    type,
    name: entry.path.split("/").pop(),
    path: entry.path,
    sha: entry.sha,
    size: entry.size ?? 0,
    url: self,
    git_url: git,
    html_url: html,
    download_url: type === "file" ? `${repoWeb(site)}/raw/${ref}/${path}` : null,
    _links: { self, git, html },
  };
  if (data && data.length > MAX_CONTENT_BYTES) {
    // Over 1 MB GitHub sends no content: the blob API (or the raw media type) has it.
    out.content = "";
    out.encoding = "none";
  } else if (data) {
    // GitHub wraps the base64 text at 60 columns.
    out.content = (data.toString("base64").match(/.{1,60}/g) ?? [])
      .map((line) => `${line}\n`)
      .join("");
    out.encoding = "base64";
  }
  return out;
}

/** The largest file the contents API returns with its content. */
export const MAX_CONTENT_BYTES = 1024 * 1024;

/** The Git Data API's `blob` shape. */
export function blob(site: Site, sha: string, data: Buffer): Json {
  return {
    sha,
    node_id: nodeId("Blob", Number.parseInt(sha.slice(0, 8), 16)),
    url: `${repoApi(site)}/git/blobs/${sha}`,
    size: data.length,
    content: (data.toString("base64").match(/.{1,60}/g) ?? []).map((l) => `${l}\n`).join(""),
    encoding: "base64",
  };
}
