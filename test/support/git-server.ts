// A real git server for tests: node:http in front of git's own git-http-backend (CGI), so clone,
// push, force push and non-fast-forward rejection behave as they do against GitHub.
import { spawn } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdtemp, mkdir, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { execa } from "execa";

export interface GitServer {
  /** Base URL, e.g. http://127.0.0.1:PORT */
  url: string;
  /** Directory holding `<owner>/<repo>.git` bare repositories. */
  root: string;
  repoUrl(owner: string, repo: string): string;
  /** Path of the bare repository `<owner>/<repo>.git` under root. */
  barePath(owner: string, repo: string): string;
  /** Creates a bare repository; with seedDir, its files become the first commit on `branch`. */
  createRepo(owner: string, repo: string, seedDir?: string, branch?: string): Promise<string>;
  /**
   * Serves `file` as a release asset of a public repository, without authentication, at
   * `/<owner>/<repo>/releases/download/<tag>/<file's name>`, as GitHub does.
   */
  addReleaseAsset(owner: string, repo: string, tag: string, file: string): void;
  stop(): Promise<void>;
}

/**
 * Author and committer of commits the test support makes itself, fixed so runs are reproducible.
 */
const SEED_IDENTITY = {
  GIT_AUTHOR_NAME: "Fleet Seed",
  GIT_AUTHOR_EMAIL: "seed@example.com",
  GIT_COMMITTER_NAME: "Fleet Seed",
  GIT_COMMITTER_EMAIL: "seed@example.com",
};

const NAME = /^[A-Za-z0-9_.-]+$/;

async function httpBackendPath(): Promise<string> {
  const { stdout } = await execa("git", ["--exec-path"]);
  return join(stdout.trim(), "git-http-backend");
}

/** Username is ignored and the password must equal the token, as with GitHub's x-access-token. */
function basicAuthMatches(header: string | undefined, token: string): boolean {
  const m = /^Basic\s+(\S+)$/i.exec(header ?? "");
  if (!m) return false;
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon >= 0 && decoded.slice(colon + 1) === token;
}

export async function startGitServer(options: {
  token: string;
  /** A GitHub App's installation token, taken as GitHub takes one: `x-access-token:<token>`. */
  appToken?: string;
}): Promise<GitServer> {
  const backend = await httpBackendPath();
  const root = await mkdtemp(join(tmpdir(), "qm-git-server-"));
  const releaseAssets = new Map<string, string>();

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const asset = req.method === "GET" && releaseAssets.get(req.url ?? "");
    if (asset) {
      res.writeHead(200, { "Content-Type": "application/octet-stream" });
      createReadStream(asset).pipe(res);
      return;
    }
    const tokens = [options.token, options.appToken ?? []].flat();
    if (!tokens.some((token) => basicAuthMatches(req.headers.authorization, token))) {
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="git"', "Content-Type": "text/plain" });
      res.end("authentication required\n");
      return;
    }
    const url = new URL(req.url ?? "/", "http://localhost");
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      // Push over HTTP needs both receivepack and an authenticated user.
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "http.receivepack",
      GIT_CONFIG_VALUE_0: "true",
      REMOTE_USER: "x-access-token",
      REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
      REQUEST_METHOD: req.method ?? "GET",
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      GATEWAY_INTERFACE: "CGI/1.1",
      SERVER_PROTOCOL: "HTTP/1.1",
    };
    if (req.headers["content-length"]) env.CONTENT_LENGTH = req.headers["content-length"];
    // The git CLI gzips large requests; the backend inflates them itself when told.
    if (req.headers["content-encoding"])
      env.HTTP_CONTENT_ENCODING = req.headers["content-encoding"];
    const protocol = req.headers["git-protocol"];
    if (typeof protocol === "string") env.GIT_PROTOCOL = protocol;

    const cgi = spawn(backend, [], { env, stdio: ["pipe", "pipe", "pipe"] });
    req.pipe(cgi.stdin);
    cgi.stderr.resume();
    relayCgiResponse(cgi.stdout, res);
    cgi.on("error", (err) => {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(String(err));
    });
  };

  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const barePath = (owner: string, repo: string): string => join(root, owner, `${repo}.git`);

  return {
    url,
    root,
    repoUrl: (owner, repo) => `${url}/${owner}/${repo}.git`,
    barePath,
    async createRepo(owner, repo, seedDir, branch = "main") {
      if (!NAME.test(owner) || !NAME.test(repo))
        throw new Error(`not a repository name: ${owner}/${repo}`);
      const bare = barePath(owner, repo);
      await mkdir(join(root, owner), { recursive: true });
      await execa("git", ["init", "--quiet", "--bare", `--initial-branch=${branch}`, bare]);
      if (seedDir) await commitDirectory(bare, seedDir, branch, "Initial commit");
      return bare;
    },
    addReleaseAsset(owner, repo, tag, file) {
      releaseAssets.set(`/${owner}/${repo}/releases/download/${tag}/${basename(file)}`, file);
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * Commits the whole of `dir` onto `branch` of a bare repo with plumbing, without copying it into a
 * clone.
 */
async function commitDirectory(
  bare: string,
  dir: string,
  branch: string,
  message: string,
): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), "qm-seed-index-"));
  try {
    const env = {
      ...SEED_IDENTITY,
      GIT_DIR: bare,
      GIT_WORK_TREE: dir,
      GIT_INDEX_FILE: join(scratch, "index"),
    };
    await execa("git", ["add", "--all", "."], { env, cwd: dir });
    const tree = (await execa("git", ["write-tree"], { env })).stdout.trim();
    const commit = (
      await execa("git", ["commit-tree", tree, "-m", message], { env })
    ).stdout.trim();
    await execa("git", ["update-ref", `refs/heads/${branch}`, commit], { env });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** CGI output is `Header: value` lines, a blank line, then the body; `Status:` carries the code. */
function relayCgiResponse(out: NodeJS.ReadableStream, res: ServerResponse): void {
  let head = Buffer.alloc(0);
  let headerDone = false;
  out.on("data", (chunk: Buffer) => {
    if (headerDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const sep = findHeaderEnd(head);
    if (!sep) return;
    headerDone = true;
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, sep.index).toString("latin1").split(/\r?\n/)) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    res.writeHead(status, headers);
    res.write(head.subarray(sep.index + sep.length));
  });
  out.on("end", () => {
    if (!headerDone) res.writeHead(502, { "Content-Type": "text/plain" });
    res.end();
  });
}

function findHeaderEnd(buf: Buffer): { index: number; length: number } | undefined {
  const crlf = buf.indexOf("\r\n\r\n");
  const lf = buf.indexOf("\n\n");
  if (crlf >= 0 && (lf < 0 || crlf <= lf)) return { index: crlf, length: 4 };
  if (lf >= 0) return { index: lf, length: 2 };
  return undefined;
}
