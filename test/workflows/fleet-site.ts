// A fleet repository where the workflow tests run its workflows: the repository docs/actions.md
// shows (its manifests and the callers) on the real git server, installing the packed release, the
// GitHub double in front of it, and its workflows started as GitHub starts them (a schedule, a
// reviewer's merge, a comment) by the step runner, against the real sshd hosts its manifests name.
// The SSH key is kept as docs/operations.md says: in the environment `quartermaster`, for the
// default branch alone.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { startGitServer, type GitServer } from "../support/git-server.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { startGitHubDouble, type GitHubDouble } from "../support/github-double/index.js";
import type { PullEvent } from "../support/github-double/repository.js";
import type { Value } from "./expressions.js";
import { fleetRunnerOptions, publishRelease, writeFleetRepository } from "./fleet-repo.js";
import { runWorkflow, type RunResult, type StepResult } from "./runner.js";

export const OWNER = "acme";
const TOKEN = "ghs_fleet_site_write";
const READ_TOKEN = "ghs_fleet_site_read";
/** The account a workflow's GITHUB_TOKEN acts as. */
const WORKFLOW_BOT = "github-actions[bot]";
/** The GitHub App installed on every site; the fleet configures it or not (`FleetSite.appId`). */
const APP = {
  clientId: "Iv23liQmFleetSiteApp",
  privateKey: "-----BEGIN RSA PRIVATE KEY-----\nthe App's own key\n-----END RSA PRIVATE KEY-----\n",
  token: "ghs_fleet_site_app",
  slug: "quartermaster",
};
/** The App's client ID and private key, for QUARTERMASTER_APP_ID and QUARTERMASTER_APP_PRIVATE_KEY. */
export const { clientId: APP_CLIENT_ID, privateKey: APP_PRIVATE_KEY } = APP;
/** Debian's libfaketime (package faketime): a run's clock is faked through it. */
export const FAKETIME_LIBRARY = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
const DAY_MS = 24 * 60 * 60 * 1000;
/** Who GitHub's own merge commits (`refs/pull/N/merge`) are by. */
const GITHUB_IDENTITY = {
  GIT_AUTHOR_NAME: "GitHub",
  GIT_AUTHOR_EMAIL: "noreply@github.com",
  GIT_COMMITTER_NAME: "GitHub",
  GIT_COMMITTER_EMAIL: "noreply@github.com",
};

/**
 * A process holding libfaketime's semaphore and shared memory for the faked runs. libfaketime
 * 0.9.10 names them after the first faked process of a tree, and a bash subshell exiting unlinks
 * its parent's, so a step's later commands would stop on "sem_open failed": with FAKETIME_SHARED
 * naming this process's, no step creates or unlinks its own. Where a process that died before
 * unlinking them left objects of the holder's pid, libfaketime makes none and names none (an empty
 * FAKETIME_SHARED, which every faked step refuses): another holder, of another pid, is started.
 */
async function faketimeHolder(tries = 5): Promise<{ shared: string; stop(): Promise<void> }> {
  const holder = execa("sh", ["-c", 'echo "$FAKETIME_SHARED"; exec sleep infinity'], {
    env: { LD_PRELOAD: FAKETIME_LIBRARY, FAKETIME: "+0" },
  });
  const shared = await new Promise<string>((resolve, reject) => {
    holder.stdout.once("data", (chunk: Buffer) => resolve(String(chunk).trim()));
    holder.catch(reject);
  });
  if (!/^\/faketime_sem_\d+ \/faketime_shm_\d+$/.test(shared)) {
    holder.kill();
    await holder.catch(() => undefined);
    if (tries > 1) return faketimeHolder(tries - 1);
    throw new Error(`libfaketime named no shared memory (FAKETIME_SHARED "${shared}")`);
  }
  return {
    shared,
    async stop() {
      holder.kill();
      await holder.catch(() => undefined);
      // Named `/faketime_sem_<pid> /faketime_shm_<pid>`: POSIX objects under /dev/shm.
      const [sem, shm] = shared.split(" ");
      await rm(`/dev/shm/sem.${sem!.slice(1)}`, { force: true });
      await rm(`/dev/shm/${shm!.slice(1)}`, { force: true });
    },
  };
}

export type WorkflowEvent = { name: string; payload: Record<string, unknown> };

/** The event GitHub sends when pull request `head` is closed, merged or not, on `base`. */
export const closedEvent = (head: string, merged: boolean, base = "main"): WorkflowEvent => ({
  name: "pull_request",
  payload: {
    action: "closed",
    pull_request: { merged, head: { ref: head }, base: { ref: base } },
    repository: { default_branch: "main" },
  },
});

/** Every failed step of a run, with its output: empty when the run passed. */
export const failures = (result: RunResult) =>
  result.jobs
    .flatMap((j) =>
      j.steps
        .filter((s) => s.outcome === "failure")
        .map((s) => `${j.name} / ${s.name} (exit ${s.exitCode}):\n${s.stdout}\n${s.stderr}`),
    )
    .join("\n");

/** A Quartermaster pull request as a reviewer reads it: kind, files changed, title, body lines. */
export interface Pull {
  number: number;
  kind: string;
  head: string;
  files: string[];
  title: string;
  lines: string[];
}

export interface FleetSite {
  repo: string;
  double: GitHubDouble;
  /** The site's bare repository on the git server. */
  bare: string;
  /** git on it. */
  git(...args: string[]): Promise<string>;
  mainSha(): Promise<string>;
  /**
   * How many days ahead of this machine's clock the runs' steps see the time (libfaketime): 0, the
   * default, fakes nothing.
   */
  daysAhead: number;
  /** The time the runs' steps see now, in epoch milliseconds. */
  now(): number;
  /**
   * The GitHub App as the fleet configured it (docs/actions.md): the variable QUARTERMASTER_APP_ID
   * (APP_CLIENT_ID names the installed App) and the secret QUARTERMASTER_APP_PRIVATE_KEY (APP_PRIVATE_KEY
   * is its key). Unset, the default: neither.
   */
  appId?: string;
  appKey?: string;
  /** The secret QUARTERMASTER_HEARTBEAT_URL: a monitor's ping address (`heartbeatMonitor`). Unset by default. */
  heartbeatUrl?: string;
  /**
   * A workflow of the fleet repository (`drift-audit.yml`) run for `event` on `ref` (default: main)
   * at `sha` (default: main's tip), with a workflow_dispatch event's inputs as its inputs.
   */
  run(
    workflow: string,
    event: WorkflowEvent,
    options?: { ref?: string; sha?: string },
  ): Promise<RunResult>;
  /**
   * The manifest-review runs GitHub starts for the pull_request events since the last call: one per
   * event, except those a workflow's GITHUB_TOKEN caused (GitHub starts no workflow for them). Each
   * reviews the pull request as it is now, merged into main as GitHub's `refs/pull/N/merge`.
   */
  reviews(): Promise<{ event: PullEvent; result: RunResult }[]>;
  /** A scheduled drift-audit run, and its propose step. */
  scheduled(): Promise<{ result: RunResult; propose: StepResult }>;
  /** The reviewer merges `number`; refresh-prs runs for the merge as GitHub starts it. */
  mergeAndRefresh(
    number: number,
  ): Promise<{ result: RunResult; job: RunResult["jobs"][0]; step: StepResult }>;
  /** The open pull requests, oldest first, each with the files it changes against main. */
  openPulls(): Promise<Pull[]>;
}

export interface FleetForge {
  server: GitServer;
  /** Scratch space of the test, removed by `stop`. */
  work: string;
  /** A new repository `OWNER/repo` holding the fleet repository, with its own GitHub double. */
  site(repo: string): Promise<FleetSite>;
  stop(): Promise<void>;
}

/**
 * The git server with the packed release published, and the fleet repository written from
 * `manifests` (fleet-manifests/, the documented callers beside them); each `site` is one copy of it.
 */
export async function startFleetForge(options: {
  /** The scratch folder's name starts with it. */
  prefix: string;
  manifests: Record<string, string>;
  /** The audit user's private key. */
  sshKey: string;
  /** The secret QUARTERMASTER_SSH_CONFIG: what the fleet keeps private (bastion addresses). */
  sshConfig?: string;
}): Promise<FleetForge> {
  const work = await mkdtemp(path.join(os.tmpdir(), options.prefix));
  const server = await startGitServer({ token: TOKEN, appToken: APP.token });
  const seed = path.join(work, "seed");
  await writeFleetRepository(seed, await publishRelease(server, work), options.manifests);
  const doubles: GitHubDouble[] = [];
  let faketime: Promise<Awaited<ReturnType<typeof faketimeHolder>>> | undefined;
  let runs = 0;

  async function site(repo: string): Promise<FleetSite> {
    await server.createRepo(OWNER, repo, seed);
    const double = await startGitHubDouble({
      git: server,
      owner: OWNER,
      repo,
      token: TOKEN,
      readToken: READ_TOKEN,
      botLogin: WORKFLOW_BOT,
      app: { token: APP.token, slug: APP.slug },
    });
    doubles.push(double);
    const bare = server.barePath(OWNER, repo);
    const git = async (...args: string[]) =>
      (await execa("git", ["--git-dir", bare, ...args])).stdout;
    const mainSha = async () => (await git("rev-parse", "main")).trim();
    let reviewed = 0;

    const self: FleetSite = {
      repo,
      double,
      bare,
      git,
      mainSha,
      daysAhead: 0,
      now: () => Date.now() + self.daysAhead * DAY_MS,
      run: async (workflow, event, { ref = "refs/heads/main", sha } = {}) => {
        const faked = self.daysAhead !== 0 && {
          LD_PRELOAD: FAKETIME_LIBRARY,
          FAKETIME: `+${self.daysAhead}d`,
          FAKETIME_SHARED: (await (faketime ??= faketimeHolder())).shared,
        };
        return runWorkflow({
          ...fleetRunnerOptions(path.join(work, "actions-cache")),
          workflow: path.join(seed, ".github/workflows", workflow),
          event,
          inputs: (event.payload.inputs as Record<string, Value> | undefined) ?? {},
          repository: {
            fullName: `${OWNER}/${repo}`,
            barePath: bare,
            sha: sha ?? (await mainSha()),
            ref,
          },
          tokens: { write: TOKEN, read: READ_TOKEN },
          secrets: {
            ...(options.sshConfig && { QUARTERMASTER_SSH_CONFIG: options.sshConfig }),
            ...(self.appKey !== undefined && { QUARTERMASTER_APP_PRIVATE_KEY: self.appKey }),
            ...(self.heartbeatUrl !== undefined && {
              QUARTERMASTER_HEARTBEAT_URL: self.heartbeatUrl,
            }),
          },
          vars: self.appId !== undefined ? { QUARTERMASTER_APP_ID: self.appId } : {},
          app: APP,
          // The key is no repository secret: only the environment the documented callers name holds
          // it, for the default branch alone (docs/operations.md, security settings).
          environments: {
            quartermaster: {
              secrets: { QUARTERMASTER_SSH_KEY: options.sshKey },
              branches: ["main"],
            },
          },
          apiUrl: double.apiUrl,
          serverUrl: server.url,
          workDir: path.join(work, `run-${++runs}`),
          // Octokit's waits shortened, as the other end-to-end tests do.
          machineEnv: {
            QUARTERMASTER_RETRY_AFTER_BASE_MS: "1",
            QUARTERMASTER_WRITE_SPACING_MS: "0",
            ...faked,
          },
        });
      },
      async scheduled() {
        const result = await self.run("drift-audit.yml", {
          name: "schedule",
          payload: { schedule: "23 * * * *" },
        });
        const propose = result
          .job("propose")[0]!
          .steps.find((s) => s.name === "Open, update or close pull requests")!;
        return { result, propose };
      },
      async reviews() {
        const events = double.pullEvents().slice(reviewed);
        reviewed += events.length;
        const started: { event: PullEvent; result: RunResult }[] = [];
        for (const event of events) {
          if (event.sender === WORKFLOW_BOT) continue;
          const pull = double.pulls().find((p) => p.number === event.number)!;
          const base = await mainSha();
          const tree = (await git("merge-tree", "--write-tree", base, pull.headSha)).trim();
          const merge = (
            await execa(
              "git",
              [
                "--git-dir",
                bare,
                "commit-tree",
                tree,
                "-p",
                base,
                "-p",
                pull.headSha,
                "-m",
                "Merge",
              ],
              { env: GITHUB_IDENTITY },
            )
          ).stdout.trim();
          const ref = `refs/pull/${pull.number}/merge`;
          await git("update-ref", ref, merge);
          const payload = {
            action: event.action,
            number: pull.number,
            pull_request: {
              number: pull.number,
              head: { ref: pull.head, sha: pull.headSha },
              base: { ref: "main", sha: base },
            },
            repository: { default_branch: "main" },
          };
          const result = await self.run(
            "manifest-review.yml",
            { name: "pull_request", payload },
            { ref, sha: merge },
          );
          started.push({ event, result });
        }
        return started;
      },
      async mergeAndRefresh(number) {
        const pull = double.pulls().find((p) => p.number === number)!;
        await double.mergePull(number);
        const result = await self.run("refresh-prs.yml", closedEvent(pull.head, true));
        const job = result.job("refresh")[0]!;
        const step = job.steps.find((s) => s.name.startsWith("Rebuild"))!;
        return { result, job, step };
      },
      async openPulls() {
        const main = await mainSha();
        return Promise.all(
          double
            .pulls()
            .filter((p) => p.state === "open")
            .sort((a, b) => a.number - b.number)
            .map(async (p) => ({
              number: p.number,
              kind: /^quartermaster--([a-z]+)--/.exec(p.head)![1]!,
              head: p.head,
              files: (await git("diff", "--no-renames", "--name-only", `${main}...${p.headSha}`))
                .split("\n")
                .filter(Boolean)
                .sort(),
              title: p.title,
              lines: (p.body ?? "").split("\n"),
            })),
        );
      },
    };
    return self;
  }

  return {
    server,
    work,
    site,
    async stop() {
      await (await faketime)?.stop();
      for (const double of doubles) await double.stop();
      await server.stop();
      await rm(work, { recursive: true, force: true });
    },
  };
}

/**
 * A push monitor as healthchecks.io runs one: every request it gets is kept, `POST /path: body`.
 * Each site pings an address of its own (`url(name)`).
 */
export async function heartbeatMonitor(): Promise<{
  url(name: string): string;
  pings(): string[];
  stop(): Promise<void>;
}> {
  const pings: string[] = [];
  const server = createServer((request, response) => {
    const body: Buffer[] = [];
    request.on("data", (chunk: Buffer) => body.push(chunk));
    request.on("end", () => {
      pings.push(`${request.method} ${request.url}: ${Buffer.concat(body).toString()}`);
      response.end("OK");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (name) => `http://127.0.0.1:${port}/ping/${name}`,
    pings: () => [...pings],
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The node file of `startTwoDriftForge`, under fleet-manifests/. */
export const TWO_DRIFT_FILE = "nodes/db-01.yaml";

/**
 * One test host, db-01, and a forge whose manifests declare two of its sysctl keys one above its
 * values, a comment apart, then a last comment (`# reviewed in May`): two pull requests on one
 * file, TWO_DRIFT_FILE. Stop the forge, then the fleet.
 */
export async function startTwoDriftForge(prefixes: {
  /** Of the test hosts' names, as startFleet takes it. */
  hosts: string;
  /** Of the forge's scratch folder. */
  forge: string;
}): Promise<{ fleet: TestFleet; forge: FleetForge }> {
  const fleet = await startFleet([{ name: "db-01" }], { prefix: prefixes.hosts });
  try {
    return { fleet, forge: await twoDriftForge(fleet, prefixes.forge) };
  } catch (error) {
    await fleet.stop();
    throw error;
  }
}

async function twoDriftForge(fleet: TestFleet, prefix: string): Promise<FleetForge> {
  const live = async (key: string) =>
    Number((await fleet.exec("db-01", `cat /proc/sys/net/ipv4/${key}`)).trim());
  return startFleetForge({
    prefix,
    sshKey: await readFile(fleet.identityFile, "utf8"),
    manifests: {
      "fleet.yaml": "ssh: { user: qm-audit, connect_timeout: 5, timeout: 60 }\n",
      [TWO_DRIFT_FILE]: [
        `host: ${fleet.hosts[0]!.address}`,
        "system:",
        "  sysctl_parameters:",
        `    net.ipv4.tcp_fin_timeout: ${(await live("tcp_fin_timeout")) + 1}`,
        "    # keepalive: agreed with the DBA team",
        `    net.ipv4.tcp_keepalive_probes: ${(await live("tcp_keepalive_probes")) + 1}`,
        "    # reviewed in May",
        "",
      ].join("\n"),
      known_hosts: await readFile(fleet.knownHosts, "utf8"),
    },
  });
}
