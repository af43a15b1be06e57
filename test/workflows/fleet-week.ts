// What the multi-day trials of the shipped workflows share: the days (a faked clock per run, the
// operators' changes dated the evening before), each day's scheduled run with the nodes it could not
// audit kept for the failure log, the reviewer's merges followed by refresh-prs, and the ways a test
// reads a pull request, the run history and the fleet page as a reviewer does.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { TestFleet } from "../support/hosts.js";
import { failures, type FleetSite, type Pull } from "./fleet-site.js";
import type { RunResult } from "./runner.js";

export const M = "fleet-manifests";

/** Epoch seconds as the hosts' logs write them: local time, which is UTC on the test machines. */
export const logTime = (seconds: number, sep: string) =>
  new Date(seconds * 1000).toISOString().slice(0, 19).replace("T", sep);

export const TICKET_MERGE =
  "**Merging records a remediation ticket**: the operator commits to bring the hosts back to the declared state. While the ticket is open, this drift is reported as acknowledged and opens no new PR. When the drift is gone, Quartermaster proposes resolving the ticket.";
export const ACCEPT_MERGE =
  "**Merging accepts the live state into the manifest**: the declared value becomes what the hosts run now, and the next audit reports them clean.";

/** The open pull requests, each as kind, files changed and title. */
export const summary = (pulls: readonly Pull[]) => pulls.map((p) => [p.kind, p.files, p.title]);

/**
 * Summary rows in title order: the order propose opens a day's PRs in follows hashes of their
 * causes, which hold the day's times, and is no promise.
 */
export const inTitleOrder = (rows: ReturnType<typeof summary>) =>
  [...rows].sort((a, b) => String(a[2]).localeCompare(String(b[2])));

/** Fails unless every line of `lines` is a line of the PR's body. */
export const hasLines = (pull: Pull, lines: readonly string[]) => {
  for (const line of lines)
    assert.ok(
      pull.lines.includes(line),
      `PR #${pull.number} lacks:\n${line}\n\n${pull.lines.join("\n")}`,
    );
};

/** The ticket file a ticket PR adds, under `remediations/<folder>/`. */
export const ticketFile = (folder: string, pull: Pull) => {
  const [file] = pull.files;
  assert.match(file!, new RegExp(`^${M}/remediations/${folder}/[a-z0-9-]+\\.yaml$`));
  return file!;
};

/** A row of a PR's table of items. */
export const row = (node: string, key: string, declared: string, live: string, at: string) =>
  `| \`${node}\` | \`${key}\` | \`${declared}\` | \`${live}\` | \`${M}/${at}\` |`;

/**
 * The secret QUARTERMASTER_SSH_CONFIG of a fleet behind the `bastion` host: where the bastion and
 * each of `nodes` (`<name>.fleet.internal`) are. The documented fleet-manifests/ssh_config adds
 * `User` for the bastion and `ProxyJump bastion` for *.fleet.internal.
 */
export function bastionSshConfig(fleet: TestFleet, nodes: readonly string[]): string {
  const at = (pattern: string, name: string) => {
    const { address, port } = fleet.hosts.find((h) => h.name === name)!;
    return `Host ${pattern}\n  HostName ${address}\n  Port ${port}`;
  };
  return [
    at("bastion", "bastion"),
    ...nodes.map((name) => at(`${name}.fleet.internal`, name)),
    "",
  ].join("\n");
}

/** Asserts what a refresh after a merge did: succeeded, audited nothing, opened and announced nothing. */
export function refreshed(merged: Awaited<ReturnType<FleetSite["mergeAndRefresh"]>>) {
  assert.equal(failures(merged.result), "");
  assert.equal(merged.job.result, "success");
  assert.ok(!merged.job.steps.some((s) => /ssh|audit/i.test(s.name)), "no node is audited");
  assert.doesNotMatch(merged.step.stdout, /^(defer|open) /m, merged.step.stdout);
  assert.doesNotMatch(merged.step.stderr, /not audited|Error|at .*\.js:\d+/, merged.step.stderr);
}

/** The pull request the fleet page of a run links `node`'s drift of `key` to, as its text shows. */
export async function pageLink(result: RunResult, node: string, key: string) {
  const page = await readFile(path.join(result.artifacts, "fleet-page", "fleet.html"), "utf8");
  const section = page.slice(page.indexOf(`data-node="${node}"`));
  const at = section.indexOf(`<code>${key}</code>`);
  const row = section.slice(at, section.indexOf("</tr>", at));
  const cells = [...row.matchAll(/<td>(.*?)<\/td>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, ""));
  // After the key's cell: first seen, last seen, cause, pull request.
  return cells[3];
}

/** A day's scheduled run's JSON report, as its artifact holds it. */
export interface DayReport {
  summary: { latentItems: number; driftItems: number };
  nodes: {
    name: string;
    status: string;
    error?: unknown;
    drift: {
      domain: string;
      key: string;
      declared: unknown;
      live: unknown;
      latent?: { after: string; becomes: unknown; because: string };
      cause?: { kind: string; evidence: string };
      detail?: string;
      acknowledgedBy?: string;
    }[];
  }[];
}

/** The days of a trial on `site`, whose hosts are `fleet`. */
export function fleetWeek(site: FleetSite, fleet: TestFleet) {
  /** When each day's scheduled run started and ended, on the runs' clock (epoch milliseconds). */
  const days: { from: number; to: number }[] = [];
  /** What happened, for the log a failure prints: each step's output and the open PRs. */
  const log: string[] = [];
  /** Each scheduled run's nodes not audited and why, for that log too. */
  const unaudited: string[] = [];
  const week = {
    /**
     * An hour before the day's run on its clock (epoch seconds), half a minute into a minute: when
     * the operators change things.
     */
    evening: 0,
    /**
     * The runs from now on are on day `n` of the week: their clock is `n - 1` days ahead of this
     * machine's.
     */
    dawn(n: number) {
      site.daysAhead = n - 1;
      week.evening = Math.floor(site.now() / 60_000) * 60 - 3600 + 30;
    },
    /** An operator writes (`>`) or appends to (`>>`) a host's file, an hour before the next run. */
    edit: (name: string, file: string, op: ">" | ">>", line: string) =>
      fleet.exec(
        name,
        `printf '%s\\n' '${line}' ${op} ${file} && touch -d @${week.evening} ${file}`,
      ),
    /** A teammate's commit onto main, an hour before the next run. */
    push: (files: Record<string, string>) =>
      site.double.pushCommit("main", files, {
        name: "Fleet Operator",
        email: "operator@example.com",
        date: new Date(week.evening * 1000).toISOString(),
      }),
    /** Day `n`'s scheduled run, and its report. */
    async scheduledOn(n: number) {
      assert.equal(site.daysAhead, n - 1);
      const from = site.now();
      const run = await site.scheduled();
      days[n] = { from, to: site.now() };
      const text = await readFile(
        path.join(run.result.artifacts, "quartermaster-report", "report.json"),
        "utf8",
      ).catch(() => "{}");
      const report = JSON.parse(text) as DayReport;
      for (const node of report.nodes ?? [])
        if (node.status === "unreachable" || node.status === "error")
          unaudited.push(`day ${n}: ${node.name} ${node.status}: ${JSON.stringify(node.error)}`);
      return { ...run, report };
    },
    /** Fails unless the PR says its drift was first seen by day `n`'s run. */
    seenOn(pull: Pull, n: number) {
      const line = pull.lines.find((l) => l.startsWith("Drifting since ")) ?? "";
      const at = Date.parse(/^Drifting since (\S+)/.exec(line)?.[1] ?? "");
      const { from, to } = days[n]!;
      assert.ok(
        at >= Math.floor(from / 60_000) * 60_000 && at <= to,
        `PR #${pull.number}: "${line}", not within day ${n}'s run (${new Date(from).toISOString()} to ${new Date(to).toISOString()})`,
      );
    },
    /** The run history the scheduled runs keep on the state branch. */
    runHistory: async () =>
      JSON.parse(await site.git("show", "quartermaster-state:run-history.json")) as {
        runs: { at: string }[];
        drift: Record<
          string,
          { node: string; key: string; pull?: { number: number; kind: string } }
        >;
      },
    /** Logs a step's output and the open PRs under `what`. */
    async say(what: string, step?: { stdout: string; stderr: string }) {
      log.push(
        `== ${what}`,
        step?.stdout ?? "",
        step?.stderr ?? "",
        JSON.stringify(await site.openPulls(), null, 2),
      );
    },
    /** Runs the trial, printing the log and the nodes not audited when it fails. */
    async logged(trial: () => Promise<void>) {
      try {
        await trial();
      } catch (error) {
        console.log([...log, "== not audited", ...unaudited].join("\n"));
        throw error;
      }
    },
  };
  return week;
}
