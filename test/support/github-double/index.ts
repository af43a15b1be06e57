// A stateful GitHub REST API double for tests, on 127.0.0.1, backed by a bare repo of the test git
// server. Every request and response is checked against GitHub's OpenAPI description; breaking it
// answers 500 and lands in `violations`, so neither the bot nor the double can drift unseen.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { GitServer } from "../git-server.js";
import { BareRepo, type GitIdentity } from "./bare-repo.js";
import { OpenApiValidator } from "./openapi.js";
import {
  ApiError,
  notFound,
  RepositoryState,
  type Permission,
  type PullEvent,
  type Reply,
} from "./repository.js";
import { assertNoSelfChange, type PullText } from "../pull-text.js";
import { now, type Account, type IssueRecord, type PullRecord } from "./shapes.js";

export interface Fault {
  method?: string;
  /** Tested against the request path without the query string. */
  path?: RegExp;
  status: number;
  /** How many matching requests get this answer (default 1). */
  times?: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface LoggedRequest {
  method: string;
  path: string;
  status: number;
  body: unknown;
  /** The operation it matched, e.g. `pulls/create`. */
  operation?: string;
  /** The login of the account its token belongs to; none when it had no valid token. */
  by?: string;
}

export interface Violation {
  kind: "request" | "response" | "unknown-operation";
  method: string;
  path: string;
  operation?: string;
  problems: string[];
}

/** Each title and body a pull request was opened or edited with, as the requests sent them. */
function pullsWritten(requests: readonly LoggedRequest[]): PullText[] {
  return requests.flatMap(({ operation, status, body, path }) => {
    if ((operation !== "pulls/create" && operation !== "pulls/update") || status >= 300) return [];
    const { title, body: text } = body as { title?: string; body?: string };
    const number = Number(/\/pulls\/(\d+)$/.exec(path)?.[1]) || undefined;
    return [{ title: title ?? "", body: text ?? null, ...(number && { number }) }];
  });
}

export interface GitHubDouble {
  apiUrl: string;
  /**
   * The environment the real CLI needs to use this double and its git server, with test-sized
   * waits.
   */
  cliEnv(): Record<string, string>;
  readonly requests: LoggedRequest[];
  readonly violations: Violation[];
  /** Requests that change something (every method but GET and HEAD). */
  writes(): LoggedRequest[];
  /** Pull request records as the double holds them. */
  pulls(): PullRecord[];
  /** Issue records (not pull requests) as the double holds them. */
  issues(): IssueRecord[];
  /** The pull_request events GitHub would have sent so far, oldest first, each with its sender. */
  pullEvents(): PullEvent[];
  /** A person edits an issue's body (ticks a checkbox, say), as the web page does. */
  editIssue(number: number, body: string): void;
  /** An issue `by` opens in the web UI (labels need triage access there; anyone's here); its number. */
  openIssue(input: { title: string; body: string; labels: string[] }, by: string): number;
  inject(fault: Fault): void;
  /** Closes a PR as a reviewer rejecting it would. */
  closePull(number: number): Promise<void>;
  /** Merges a PR exactly as PUT .../merge does; returns the new base tip. */
  mergePull(number: number, by?: string): Promise<string>;
  /**
   * A person's commit onto a branch (created from the default branch if missing); null deletes a
   * file.
   */
  pushCommit(
    branch: string,
    files: Record<string, string | null>,
    author?: string | GitIdentity,
  ): Promise<string>;
  addCollaborator(login: string, permission: Permission): void;
  /** A comment on PR or issue `number` by `by`, as someone commenting in the web UI would. */
  addComment(number: number, body: string, by: string): Promise<void>;
  /** The comments on PR or issue `number`, oldest first. */
  comments(number: number): { body: string; by: string }[];
  /** A team of the repository's organization with access to it: reviews may be asked of it. */
  addTeam(slug: string): void;
  /**
   * Stops it; then fails when a pull request was opened or edited with a title or body line that
   * states a change from a value to itself (`assertNoSelfChange`): so every test checks every PR.
   */
  stop(): Promise<void>;
}

/**
 * GitHub's answer to too many requests in a short time; Octokit's throttling plugin waits and
 * retries it.
 */
export function secondaryRateLimit(match: Omit<Fault, "status" | "headers" | "body"> = {}): Fault {
  return {
    ...match,
    status: 403,
    headers: { "retry-after": "1" },
    body: {
      message:
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
      documentation_url:
        "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
      status: "403",
    },
  };
}

export function badGateway(match: Omit<Fault, "status" | "body"> = {}): Fault {
  return { ...match, status: 502, body: { message: "Server Error" } };
}

export interface GitHubDoubleOptions {
  git: GitServer;
  owner: string;
  repo: string;
  token: string;
  /** The account the token belongs to: author of PRs, comments and API commits. */
  botLogin: string;
  /**
   * A GitHub App installed on the repository: its installation token acts as `<slug>[bot]` (a Bot,
   * which GET /user answers with 403, as for any installation token), with write access.
   */
  app?: { token: string; slug: string };
  defaultBranch?: string;
  /** A second token that may only read, like a GITHUB_TOKEN of a job without write permissions. */
  readToken?: string;
  /** The largest blob a write may make: GitHub's 100 MiB unless given. */
  maxBlobBytes?: number;
}

const SUBSET = new URL("./openapi-subset.json", import.meta.url);
// Shared by the doubles of a test process: it keeps no state but the schemas it has compiled.
let sharedValidator: OpenApiValidator | undefined;

export async function startGitHubDouble(options: GitHubDoubleOptions): Promise<GitHubDouble> {
  const validator = (sharedValidator ??= new OpenApiValidator(SUBSET));
  const requests: LoggedRequest[] = [];
  const violations: Violation[] = [];
  const faults: (Fault & { left: number })[] = [];
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const owner: Account = { login: options.owner, id: 1, type: "Organization" };
  const bot: Account = {
    login: options.botLogin,
    id: 2,
    type: options.botLogin.endsWith("[bot]") ? "Bot" : "User",
  };
  const app: Account | undefined = options.app && {
    login: `${options.app.slug}[bot]`,
    id: 3,
    type: "Bot",
  };
  const state = new RepositoryState(
    {
      api: apiUrl,
      web: options.git.url,
      owner: options.owner,
      repo: options.repo,
      repoId: 100,
      defaultBranch: options.defaultBranch ?? "main",
      createdAt: now(),
    },
    new BareRepo(options.git.barePath(options.owner, options.repo)),
    owner,
    app ? [bot, app] : [bot],
  );
  const readOnly = (authorization: string | undefined) =>
    options.readToken !== undefined && authorized(authorization, options.readToken);
  /** The account a request's token belongs to: a read-only token is a workflow's, as `bot`. */
  const actorOf = (authorization: string | undefined): Account | undefined =>
    authorized(authorization, options.token) || readOnly(authorization)
      ? bot
      : app && authorized(authorization, options.app!.token)
        ? app
        : undefined;
  if (options.maxBlobBytes !== undefined) state.maxBlobBytes = options.maxBlobBytes;

  // One request at a time: state changes stay atomic and test runs deterministic.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(work, work);
    queue = run.catch(() => undefined);
    return run;
  };

  const answer = async (
    req: IncomingMessage,
    raw: Buffer,
  ): Promise<Reply & { operation?: string; parsed: unknown }> => {
    const url = new URL(req.url ?? "/", apiUrl);
    const method = req.method ?? "GET";
    const text = raw.toString("utf8");
    let parsed: unknown = text;
    let isJson = true;
    try {
      parsed = text.trim() === "" ? undefined : JSON.parse(text);
    } catch {
      isJson = false;
    }
    const match = validator.match(method, url.pathname);
    const actor = actorOf(req.headers.authorization);
    if (!actor) {
      const message = req.headers.authorization ? "Bad credentials" : "Requires authentication";
      const reply = new ApiError(401, message).reply();
      const problems = match
        ? validator.checkResponse(match.operationId, reply.status, reply.body, true)
        : [];
      if (problems.length)
        violations.push({
          kind: "response",
          method,
          path: url.pathname,
          operation: match?.operationId,
          problems,
        });
      return { ...reply, operation: match?.operationId, parsed };
    }
    if (readOnly(req.headers.authorization) && method !== "GET" && method !== "HEAD") {
      return {
        ...new ApiError(403, "Resource not accessible by integration").reply(),
        operation: match?.operationId,
        parsed,
      };
    }
    // Injected answers are the test's own words and are sent as given, unchecked.
    const fault = faults.find(
      (f) =>
        f.left > 0 && (!f.method || f.method === method) && (!f.path || f.path.test(url.pathname)),
    );
    if (fault) {
      fault.left--;
      return {
        status: fault.status,
        body: fault.body,
        headers: fault.headers,
        operation: match?.operationId,
        parsed,
      };
    }
    if (!match) {
      violations.push({
        kind: "unknown-operation",
        method,
        path: url.pathname,
        problems: ["no such operation in the OpenAPI subset"],
      });
      return { ...notFound().reply(), parsed };
    }
    if (!isJson) {
      violations.push({
        kind: "request",
        method,
        path: url.pathname,
        operation: match.operationId,
        problems: ["body is not JSON"],
      });
      return {
        ...new ApiError(400, "Problems parsing JSON").reply(),
        operation: match.operationId,
        parsed,
      };
    }
    const problems = validator.checkRequest(match, url.searchParams, parsed, parsed !== undefined);
    if (problems.length) {
      violations.push({
        kind: "request",
        method,
        path: url.pathname,
        operation: match.operationId,
        problems,
      });
      return { ...failLoudly("request", problems), operation: match.operationId, parsed };
    }
    let reply: Reply;
    // An operation on a repository answers for this one only; GET /user names none.
    const repository = "owner" in match.params || "repo" in match.params;
    if (
      repository &&
      (match.params.owner !== options.owner || match.params.repo !== options.repo)
    ) {
      reply = notFound().reply();
    } else {
      try {
        await state.sync();
        const handler = state.handlers[match.operationId]!;
        reply = await handler({
          params: match.params,
          query: url.searchParams,
          body: (parsed ?? {}) as Record<string, unknown>,
          url,
          actor,
        });
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        reply = err.reply();
      }
    }
    const responseProblems = validator.checkResponse(
      match.operationId,
      reply.status,
      reply.body,
      reply.body !== undefined,
    );
    if (responseProblems.length) {
      violations.push({
        kind: "response",
        method,
        path: url.pathname,
        operation: match.operationId,
        problems: responseProblems,
      });
      return { ...failLoudly("response", responseProblems), operation: match.operationId, parsed };
    }
    return { ...reply, operation: match.operationId, parsed };
  };

  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      void serial(() => answer(req, Buffer.concat(chunks)))
        .catch((err: unknown): Reply & { operation?: string; parsed: unknown } => ({
          status: 500,
          body: { message: `GitHub double failed: ${String(err)}` },
          parsed: undefined,
        }))
        .then((reply) => {
          const path = new URL(req.url ?? "/", apiUrl).pathname;
          const by = actorOf(req.headers.authorization)?.login;
          requests.push({
            method: req.method ?? "GET",
            path,
            status: reply.status,
            body: reply.parsed,
            operation: reply.operation,
            ...(by !== undefined && { by }),
          });
          const headers: Record<string, string> = {
            "x-github-api-version-selected": "2022-11-28",
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "4999",
            "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 3600),
            ...reply.headers,
          };
          if (reply.body === undefined) {
            res.writeHead(reply.status, headers).end();
          } else {
            res
              .writeHead(reply.status, {
                "content-type": "application/json; charset=utf-8",
                ...headers,
              })
              .end(JSON.stringify(reply.body));
          }
        });
    });
  });

  const identityOf = (author: string | GitIdentity): GitIdentity =>
    typeof author === "string" ? state.identity(state.account(author)) : author;

  return {
    apiUrl,
    cliEnv: () => ({
      GITHUB_TOKEN: options.token,
      GITHUB_API_URL: apiUrl,
      GITHUB_REPOSITORY: `${options.owner}/${options.repo}`,
      GITHUB_SERVER_URL: options.git.url,
      QUARTERMASTER_RETRY_AFTER_BASE_MS: "1",
      QUARTERMASTER_WRITE_SPACING_MS: "0",
      // The bot keeps its blobs under the limit it is told of, as for a GitHub Enterprise Server's.
      ...(options.maxBlobBytes !== undefined && {
        QUARTERMASTER_MAX_BLOB_BYTES: String(options.maxBlobBytes),
      }),
      // GitHub does not tell an App's or Actions' token who it is (GET /user: 403): the callers say.
      ...(bot.type === "Bot" && { QUARTERMASTER_BOT_LOGIN: bot.login }),
    }),
    requests,
    violations,
    writes: () => requests.filter((r) => r.method !== "GET" && r.method !== "HEAD"),
    pulls: () => [...state.pulls.values()],
    issues: () => [...state.issues.values()],
    pullEvents: () => [...state.pullEvents],
    editIssue: (number, body) => {
      const record = state.issues.get(number);
      if (!record) throw new Error(`no issue #${number}`);
      Object.assign(record, { body, updatedAt: now() });
    },
    openIssue: (input, by) => state.openIssue(input, state.account(by)).number,
    inject(fault) {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    closePull: (number) =>
      serial(async () => {
        await state.sync();
        const pr = state.pulls.get(number);
        if (!pr) throw new Error(`no pull request #${number}`);
        if (pr.state === "open")
          Object.assign(pr, { state: "closed", closedAt: now(), updatedAt: now() });
      }),
    mergePull: (number, by = "fleet-reviewer") =>
      serial(async () => {
        await state.sync();
        const pr = state.pulls.get(number);
        if (!pr) throw new Error(`no pull request #${number}`);
        try {
          await state.merge(pr, {}, state.account(by));
        } catch (err) {
          throw err instanceof ApiError
            ? new Error(`cannot merge #${number}: ${err.message}`)
            : err;
        }
        return pr.mergeCommitSha!;
      }),
    pushCommit: (branch, files, author = "fleet-operator") =>
      serial(async () => {
        const repo = state.repo;
        const parent =
          (await repo.branchSha(branch)) ?? (await repo.branchSha(state.site.defaultBranch));
        if (!parent) throw new Error(`no branch ${branch} and no default branch to start it from`);
        const changes = Object.entries(files).map(([path, text]) =>
          text === null ? { path, sha: null } : { path, content: text },
        );
        const tree = await repo.writeTree(changes, `${parent}^{tree}`);
        const who = identityOf(author);
        const sha = await repo.writeCommit(
          tree,
          [parent],
          `Edit ${Object.keys(files).join(", ")}\n`,
          who,
          who,
        );
        const current = await repo.branchSha(branch);
        await repo.updateRef(`refs/heads/${branch}`, sha, current ?? "0".repeat(40));
        state.touch();
        await state.sync();
        // The pusher: the author's account, by its noreply address where it has one.
        state.headMoved(
          `refs/heads/${branch}`,
          state.accountByEmail(who.email) ?? state.account(who.name),
        );
        return sha;
      }),
    addCollaborator(login, permission) {
      state.account(login);
      state.permissions.set(login, permission);
    },
    addComment: (number, body, by) =>
      serial(async () => {
        await state.sync();
        if (!state.pulls.has(number)) throw new Error(`no pull request #${number}`);
        const at = now();
        state.comments.push({
          id: state.id(),
          issue: number,
          body,
          user: state.account(by),
          createdAt: at,
          updatedAt: at,
        });
      }),
    comments: (number) =>
      state.comments
        .filter((c) => c.issue === number)
        .map((c) => ({ body: c.body, by: c.user.login })),
    addTeam(slug) {
      state.teams.set(slug, { slug, id: state.id() });
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      assertNoSelfChange(pullsWritten(requests));
    },
  };
}

/** `Authorization: token X` or `Bearer X`, as GitHub accepts both. */
function authorized(header: string | undefined, token: string): boolean {
  const m = /^(?:token|bearer)\s+(\S+)$/i.exec(header ?? "");
  return m?.[1] === token;
}

function failLoudly(kind: "request" | "response", problems: string[]): Reply {
  return {
    status: 500,
    body: {
      message: `GitHub double: ${kind} does not match GitHub's OpenAPI description: ${problems.join("; ")}`,
    },
  };
}
