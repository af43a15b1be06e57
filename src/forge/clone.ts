import { createHash } from "node:crypto";
import fs from "node:fs";
import { rm } from "node:fs/promises";
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
 * Shallow clone (or refresh) of the manifest repository with isomorphic-git, over HTTP(S). The
 * caller has checked the URL and ref (repoUrlProblem, refProblem).
 */
export async function pullRepository(options: PullOptions): Promise<PulledRepo> {
  // One cache per repository and ref, so switching --ref never mixes two checkouts.
  const dir = path.join(
    options.cacheDir,
    createHash("sha256")
      .update(`${options.url}\0${options.ref ?? ""}`)
      .digest("hex")
      .slice(0, 16),
  );
  const token =
    options.token && tokenAllowed(options.url, options.serverUrl) ? options.token : undefined;
  const onAuth = token ? () => ({ username: "x-access-token", password: token }) : undefined;
  const common = { fs, http, dir, url: options.url, onAuth, singleBranch: true, depth: 1 } as const;
  const where = `${shownUrl(options.url)}${options.ref ? ` at ${options.ref}` : ""}`;
  const fail = (message: string, status?: number, cause?: unknown) =>
    new ForgeError(`cannot pull ${where}: ${message}`, { status, cause });
  try {
    if (fs.existsSync(path.join(dir, ".git"))) {
      // The branch the cache holds: the one asked for, else the remote default branch it was cloned
      // at.
      const branch = options.ref ?? (await git.currentBranch({ fs, dir }));
      if (!branch) throw fail("the cached clone is on no branch");
      const fetched = await git.fetch({ ...common, ref: branch, tags: false, prune: true });
      const target = fetched.fetchHead;
      if (!target) throw fail("fetch returned no head");
      await git.writeRef({ fs, dir, ref: `refs/heads/${branch}`, value: target, force: true });
      await git.checkout({ fs, dir, ref: branch, force: true });
      return { dir, revision: target };
    }
    await rm(dir, { recursive: true, force: true });
    await git.clone({ ...common, ref: options.ref, noTags: true });
    return { dir, revision: await git.resolveRef({ fs, dir, ref: "HEAD" }) };
  } catch (error) {
    if (error instanceof ForgeError) throw error;
    // The remote, the network or the disk failed (git's errors and Node's system errors alike).
    if (!(error instanceof Error)) throw error;
    const status = error instanceof git.Errors.HttpError ? error.data.statusCode : undefined;
    throw fail(error.message, status, error);
  }
}
