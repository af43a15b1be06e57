import { createHash } from "../crypto.js";
import fs from "node:fs";
import {
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  utimes,
  writeFile,
} from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import git from "isomorphic-git";
import http from "isomorphic-git/http/node";
import { ForgeError } from "../errors.js";

export interface PullOptions {
  url: string;
  /** Branch or tag; the remote's default branch when absent. */
  ref?: string;
  /** Sent only where tokenAllowed() says so; elsewhere the pull is anonymous. */
  token?: string;
  /** The forge's web address (GITHUB_SERVER_URL): the only host the token is sent to. */
  serverUrl?: string;
  /** Reused between runs: a fetch of what changed instead of a fresh clone. */
  cacheDir: string;
}

const LOOPBACK = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Whether the token may go to `url`: only to the host of GITHUB_SERVER_URL (default github.com),
 * over https, or plain http to loopback (a server on this machine). Anywhere else it would hand the
 * token to whoever runs that host, or to anyone on the path.
 */
export function tokenAllowed(url: string, serverUrl = "https://github.com"): boolean {
  if (!URL.canParse(url) || !URL.canParse(serverUrl)) return false;
  const target = new URL(url);
  const server = new URL(serverUrl);
  if (target.host.toLowerCase() !== server.host.toLowerCase()) return false;
  return (
    target.protocol === "https:" || (target.protocol === "http:" && LOOPBACK.test(target.hostname))
  );
}

/**
 * A repository URL as messages show it: credentials written into it (`https://user:token@...`,
 * `?token=...`) replaced, never printed.
 */
export function shownUrl(url: string): string {
  if (!URL.canParse(url)) return url.replace(/\/\/[^/@]*@/, "//***@");
  const parsed = new URL(url);
  if (parsed.username || parsed.password) [parsed.username, parsed.password] = ["***", ""];
  if (parsed.search) parsed.search = "?***";
  return parsed.toString();
}

/** Why `url` is no repository URL isomorphic-git can pull, if it is not. */
export function repoUrlProblem(url: string): string | undefined {
  return /^https?:\/\/[^/]/i.test(url) && URL.canParse(url)
    ? undefined
    : "an http(s) URL (isomorphic-git speaks HTTP only)";
}

/** Why `ref` is no branch, tag or commit name git would take, if it is not. */
export function refProblem(ref: string): string | undefined {
  if (!ref || ref.length > 255) return "a branch, tag or commit of 1 to 255 characters";
  if (ref.startsWith("-")) return "a name, not an option (it starts with -)";
  if (/[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{|\/\/|^\/|\/$|\.lock$|\.$/.test(ref))
    return "a name git allows (no spaces, control characters, ~ ^ : ? * [ \\, .., @{ or //)";
  return undefined;
}

export interface PulledRepo {
  dir: string;
  revision: string;
}

/**
 * `url` without the credentials written into it, and those credentials: they go to the server
 * through onAuth, never into the cache's .git/config.
 */
export function splitCredentials(url: string): {
  url: string;
  credentials?: { username: string; password: string };
} {
  if (!URL.canParse(url)) return { url };
  const parsed = new URL(url);
  if (!parsed.username && !parsed.password) return { url };
  const credentials = {
    username: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
  };
  [parsed.username, parsed.password] = ["", ""];
  return { url: parsed.toString(), credentials };
}

// A lock older than this is a crashed run's, on whatever machine shares the cache.
const STALE_LOCK_MS = 10 * 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether the run that wrote `lock` is gone: a dead pid on this machine, or too old anywhere. */
async function staleLock(lock: string): Promise<boolean> {
  const [owner, info] = await Promise.all([
    readFile(lock, "utf8").catch(() => undefined),
    stat(lock).catch(() => undefined),
  ]);
  if (owner === undefined || !info) return false; // released meanwhile: just try again
  const [host, pid] = owner.split(" ");
  if (host === os.hostname() && Number.isSafeInteger(Number(pid))) {
    try {
      process.kill(Number(pid), 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ESRCH") return true;
    }
  }
  return Date.now() - info.mtimeMs > STALE_LOCK_MS;
}

/**
 * Runs `pull` holding `lock`, a file created exclusively beside the cached clone, so runs sharing
 * one cache folder (shards on one runner, cron and a manual run) never fetch into one .git at
 * once. A lock left by a crashed run is taken over.
 */
async function withLock<T>(lock: string, where: string, pull: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (;;) {
    try {
      await writeFile(lock, `${os.hostname()} ${process.pid}`, { flag: "wx" });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    if (await staleLock(lock)) await rm(lock, { force: true });
    else if (Date.now() - started > STALE_LOCK_MS)
      throw new ForgeError(
        `cannot pull ${where}: another run has held ${lock} for 10 minutes (delete it if no run is going)`,
      );
    else await sleep(50 + Math.random() * 100);
  }
  try {
    return await pull();
  } finally {
    await rm(lock, { force: true });
  }
}

// A commit's checkout no run has taken for this long is removed (a run reads its tree for less).
const CHECKOUT_KEEP_MS = 24 * 3_600_000;

/**
 * The tree a run reads: the clone at `dir`, checked out at `revision`, copied aside once to
 * `dir@revision` and never written again, so a concurrent run that checks another commit out into
 * the clone never changes a file this run reads. Called holding the clone's lock; removes the
 * checkouts of other commits no run has taken for a day.
 */
async function commitCheckout(dir: string, revision: string): Promise<string> {
  const at = `${dir}@${revision}`;
  if (!fs.existsSync(at)) {
    const fresh = await mkdtemp(`${dir}.copy-`);
    try {
      await cp(dir, fresh, { recursive: true, preserveTimestamps: true });
      await rename(fresh, at);
    } finally {
      await rm(fresh, { recursive: true, force: true });
    }
  }
  const now = new Date();
  await utimes(at, now, now);
  const prefix = `${path.basename(dir)}@`;
  for (const name of await readdir(path.dirname(dir))) {
    const other = path.join(path.dirname(dir), name);
    if (!name.startsWith(prefix) || other === at) continue;
    const info = await stat(other).catch(() => undefined);
    if (info && now.getTime() - info.mtimeMs > CHECKOUT_KEEP_MS)
      await rm(other, { recursive: true, force: true });
  }
  return at;
}

/**
 * Shallow clone (or refresh) of the manifest repository with isomorphic-git, over HTTP(S), and the
 * run's own checkout of the commit pulled (commitCheckout). The caller has checked the URL and ref
 * (repoUrlProblem, refProblem).
 */
export async function pullRepository(options: PullOptions): Promise<PulledRepo> {
  const { url, credentials } = splitCredentials(options.url);
  // One cache per repository and ref, so switching --ref never mixes two checkouts.
  const dir = path.join(
    options.cacheDir,
    createHash("sha256")
      .update(`${url}\0${options.ref ?? ""}`)
      .digest("hex")
      .slice(0, 16),
  );
  const token =
    options.token && tokenAllowed(options.url, options.serverUrl) ? options.token : undefined;
  const auth = credentials ?? (token && { username: "x-access-token", password: token });
  const onAuth = auth ? () => auth : undefined;
  const where = `${shownUrl(options.url)}${options.ref ? ` at ${options.ref}` : ""}`;
  const fail = (message: string, status?: number, cause?: unknown) =>
    new ForgeError(`cannot pull ${where}: ${message}`, { status, cause });
  try {
    await mkdir(options.cacheDir, { recursive: true });
    return await withLock(`${dir}.lock`, where, async () => {
      if (fs.existsSync(path.join(dir, ".git"))) {
        // A cache written by an older version may hold credentials in its remote URL.
        await git.setConfig({ fs, dir, path: "remote.origin.url", value: url });
        const revision = await update(dir, url, onAuth, options.ref);
        return { dir: await commitCheckout(dir, revision), revision };
      }
      // Cloned aside and renamed into place: a failed clone leaves nothing behind.
      await rm(dir, { recursive: true, force: true });
      const fresh = await mkdtemp(`${dir}.clone-`);
      try {
        let revision: string;
        if (options.ref) {
          // A branch or a tag: fetched by name, its commit checked out.
          await git.init({ fs, dir: fresh });
          await git.addRemote({ fs, dir: fresh, remote: "origin", url });
          revision = await update(fresh, url, onAuth, options.ref);
        } else {
          // The remote's default branch, which only a clone learns.
          await git.clone({
            fs,
            http,
            dir: fresh,
            url,
            onAuth,
            singleBranch: true,
            depth: 1,
            noTags: true,
          });
          revision = await git.resolveRef({ fs, dir: fresh, ref: "HEAD" });
        }
        await rename(fresh, dir);
        return { dir: await commitCheckout(dir, revision), revision };
      } finally {
        await rm(fresh, { recursive: true, force: true });
      }
    });
  } catch (error) {
    if (error instanceof ForgeError) throw error;
    // The remote, the network or the disk failed (git's errors and Node's system errors alike).
    if (!(error instanceof Error)) throw error;
    const status = error instanceof git.Errors.HttpError ? error.data.statusCode : undefined;
    throw fail(error.message, status, error);
  }
}

/**
 * Fetches `ref` (a branch or tag; without one, the branch the cache was cloned at) into the clone
 * at `dir` and checks out the commit it names; returns that commit.
 */
async function update(
  dir: string,
  url: string,
  onAuth: (() => { username: string; password: string }) | undefined,
  ref: string | undefined,
): Promise<string> {
  const branch = ref ?? (await git.currentBranch({ fs, dir }));
  if (!branch) throw new Error("the cached clone is on no branch");
  const fetched = await git.fetch({
    fs,
    http,
    dir,
    url,
    onAuth,
    ref: branch,
    singleBranch: true,
    depth: 1,
    tags: false,
    prune: true,
  });
  if (!fetched.fetchHead) throw new Error("fetch returned no head");
  // An annotated tag names a tag object: the commit is what it points at.
  const commit = await peel(dir, fetched.fetchHead);
  // Already there: nothing is rewritten, so a run reading this checkout meanwhile (another shard,
  // a concurrent propose) never meets a ref or file halfway through being written.
  if ((await git.resolveRef({ fs, dir, ref: "HEAD" }).catch(() => undefined)) === commit)
    return commit;
  if (ref === undefined) {
    await git.writeRef({ fs, dir, ref: `refs/heads/${branch}`, value: commit, force: true });
    await git.checkout({ fs, dir, ref: branch, force: true });
  } else {
    await git.checkout({ fs, dir, ref: commit, force: true });
  }
  return commit;
}

async function peel(dir: string, oid: string): Promise<string> {
  const object = await git.readObject({ fs, dir, oid });
  return object.type === "tag" ? peel(dir, (await git.readTag({ fs, dir, oid })).tag.object) : oid;
}
