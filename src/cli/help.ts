// Per-command help, generated from the options each command really parses (so it cannot list a
// flag the command does not take) and the descriptions below (a test fails when one is missing).
// util.parseArgs stays the parser: it is Node's own, strict, and typed from the option table,
// which a help layer of a few dozen lines completes without a second option model to keep in sync.
import type { ParseArgsConfig } from "node:util";

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * What a flag means, and the placeholder its value is shown with. The same flag means the same
 * everywhere.
 */
/** A flag's value placeholder and what it does, as help shows them. */
interface FlagHelp {
  value?: string;
  text: string;
}

const FLAGS: Record<string, FlagHelp> = {
  manifests: {
    value: "DIR",
    text: "the manifest tree (default: the one this directory is in, or fleet-manifests/ here or above)",
  },
  manifest: {
    value: "FILE",
    text: "one node-spec file, as kept on the node itself (instead of --manifests)",
  },
  repo: { value: "URL", text: "pull the manifests from this git repository (https; cached)" },
  ref: { value: "REF", text: "branch, tag or commit of --repo (default: its default branch)" },
  "cache-dir": {
    value: "DIR",
    text: "where pulled repositories are cached (default: ~/.cache/quartermaster)",
  },
  nodes: { value: "LIST", text: "node names or globs, comma-separated: web-01,db-*" },
  node: { value: "NAME", text: "the node to look at" },
  category: { value: "LIST", text: "audit only these domains, comma-separated: sysctl,files" },
  local: { text: "audit this machine through a local shell instead of SSH" },
  format: {
    value: "FORMAT",
    text: "text, json, markdown, junit, prometheus, events or github (default: text)",
  },
  out: { value: "FILE", text: "write the output to FILE instead of stdout" },
  verbose: { text: "show diffs and remediation for every drift item" },
  "no-color": { text: "no colours, even on a terminal (NO_COLOR works too)" },
  color: { text: "colours even when the output is not a terminal (FORCE_COLOR works too)" },
  concurrency: {
    value: "N",
    text: "nodes audited at once (default: 32); through one jump host, at most its ssh.max_sessions (default: 8)",
  },
  timeout: {
    value: "SECONDS",
    text: "per-node time limit, connection and probe (default: the node's ssh.timeout, else 60)",
  },
  "ssh-config": { value: "FILE", text: "ssh_config file for the ssh client (ssh -F)" },
  shard: {
    value: "K/N",
    text: "audit only shard K of N (for a matrix of jobs; join with merge-reports)",
  },
  strict: {
    text: "exit with bit 4 when a declared item could not be read (unknown), as for a node not audited",
  },
  "max-unaudited": {
    value: "N|N%",
    text: "exit with bit 8 when more than N nodes (or N% of them) were not audited (default: fleet.yaml audit.max_unaudited, else no limit)",
  },
  state: {
    value: "FILE",
    text: "the audit history kept on the state branch (audit-history.json): since when nodes are unaudited and drift exists, and bit 8 for audit.max_unaudited_for",
  },
  "state-from-repo": {
    text: "read the audit history from the state branch of $GITHUB_REPOSITORY (needs GITHUB_TOKEN)",
  },
  shards: { value: "N", text: "number of shards (0: about --nodes-per-shard nodes each)" },
  "nodes-per-shard": { value: "N", text: "nodes per shard when --shards is 0 (default: 200)" },
  report: { value: "FILE", text: "an audit report written with --format json" },
  base: { value: "REF", text: "the git ref to compare with or to open pull requests against" },
  "dry-run": { text: "print the plan; change nothing" },
  "max-new-prs": {
    value: "N",
    text: "open at most N new pull requests this run (default: fleet.yaml propose.max_new_prs, else 10)",
  },
  "max-bytes": {
    value: "N",
    text: "Markdown only: cap the output at N bytes (GitHub's job summary takes 1 MiB)",
  },
  summary: {
    value: "FILE",
    text: "append a Markdown account of the run (opened, updated, closed, deferred) to FILE, e.g. $GITHUB_STEP_SUMMARY",
  },
  event: { value: "FILE", text: "the GitHub event payload (default: $GITHUB_EVENT_PATH)" },
  interval: {
    value: "SECONDS",
    text: "seconds between polls of the domains no file event announces (default: 60)",
  },
  "metrics-listen": {
    value: "HOST:PORT",
    text: "serve Prometheus /metrics and /healthz on this address",
  },
  packages: {
    value: "MODE",
    text: "how installed packages are declared: names (any version), versions (pinned) or none (default: names)",
  },
  "no-ephemeral-range": {
    text: "declare every loopback listener by its port, not the ephemeral port range as one tcp/LOW-HIGH@loopback rule per protocol",
  },
  inventory: {
    value: "FILE",
    text: "the hosts to adopt: an Ansible inventory (INI, YAML or ansible-inventory --list JSON), an ssh_config or one host a line",
  },
  "known-hosts": {
    value: "FILE",
    text: "take host keys from FILE only (default: the known_hosts files ssh uses for each host)",
  },
  "maintenance-marker": {
    value: "FILE",
    text: "pause while this file exists (default: fleet.yaml audit.maintenance_marker)",
  },
  help: { text: "show this help" },
};

/** What each command does, the line it is used by, and examples that work as written. */
/** The audit's exit codes: the CLI's own help shows them; each command's help shows its own. */
export const EXIT_CODES =
  "Exit codes: 0 clean, 1 drift, 2 usage or manifest error, 4 nodes not audited, or with --strict items unknown, 8 more nodes not audited than allowed (--max-unaudited, audit.max_unaudited_for); bits add: 13 = 1 + 4 + 8.";

export const COMMAND_HELP: Record<
  string,
  {
    summary: string;
    usage: string;
    examples: string[];
    exits: string;
    flags?: Record<string, FlagHelp>;
  }
> = {
  audit: {
    summary: "read-only audit of the selected nodes",
    usage: "audit [--local | --nodes LIST] [options]",
    examples: [
      "quartermaster audit --local",
      "quartermaster audit --nodes 'web-*' --format json --out report.json",
    ],
    exits: EXIT_CODES,
  },
  diff: {
    summary: "-want +got view of one domain's drift",
    usage: "diff --category DOMAIN [--node NAME] [options]",
    examples: ["quartermaster diff --category files --local"],
    exits:
      "Exit codes: 0 no drift, 1 drift, 2 usage or manifest error, 4 nodes not audited (5 = 1 + 4).",
    flags: {
      category: { value: "DOMAIN", text: "the one domain to show: sysctl, files, ..." },
      node: { value: "NAME", text: "the node to look at (or --nodes for several)" },
    },
  },
  snapshot: {
    summary:
      "print a node-spec YAML of a node's live state (and of the files and units it declares)",
    usage: "snapshot (--local | --node LIST) [options]",
    examples: [
      "quartermaster snapshot --local > fleet-manifests/nodes/$(hostname).yaml",
      "quartermaster snapshot --node web-01 --packages versions --out web-01.yaml",
      "quartermaster snapshot --node 'web-*,db-01' > snapshots.yaml",
    ],
    exits:
      "Exit codes: 0 written, 2 usage or manifest error, 4 a node could not be read (the others are written).",
    flags: {
      node: {
        value: "LIST",
        text: "node names or globs, comma-separated: one YAML document per node, keeping its host, groups and ssh",
      },
      concurrency: {
        value: "N",
        text: "nodes read at once (default: 32); through one jump host, at most its ssh.max_sessions (default: 8)",
      },
      manifests: {
        value: "DIR",
        text: "the manifest tree the node is declared in: its declared files and units are snapshot too (--local alone snapshots this machine as a new node; --node finds the tree as audit does)",
      },
    },
  },
  adopt: {
    summary: "write a layered manifest tree for an existing fleet from its inventory",
    usage: "adopt --inventory FILE [--manifests DIR] [options]",
    examples: [
      "quartermaster adopt --inventory inventory.yml --manifests fleet-manifests",
      "ansible-inventory -i hosts.ini --list > inv.json && quartermaster adopt --inventory inv.json",
    ],
    exits:
      "Exit codes: 0 every host adopted (or already declared), 2 usage, inventory or manifest error (nothing written), 4 some hosts left out (unreachable, no trusted host key, unusable snapshot; the rest are written).",
    flags: {
      manifests: {
        value: "DIR",
        text: "the manifest tree to write into (default: fleet-manifests); existing files are never changed",
      },
      concurrency: {
        value: "N",
        text: "hosts snapshot at once (default: 32); through one jump host, at most its ssh.max_sessions (default: 8)",
      },
      timeout: {
        value: "SECONDS",
        text: "per-host time limit, connection and snapshot (default: 60)",
      },
    },
  },
  validate: {
    summary: "check the manifest tree",
    usage: "validate [--manifests DIR]",
    examples: ["quartermaster validate --manifests fleet-manifests"],
    exits: "Exit codes: 0 valid, 2 usage or manifest error.",
  },
  propose: {
    summary: "open, update or close pull requests from an audit report",
    usage: "propose --report FILE [options]",
    examples: ["quartermaster propose --report report.json --dry-run"],
    exits:
      "Exit codes: 0 every action carried out (or, with --dry-run, planned), 2 usage, manifest or report error, 4 some actions failed (the next run retries them), 8 the report says more nodes were not audited than allowed (after every action: the run still proposes for the nodes audited).",
  },
  "merge-reports": {
    summary: "merge the reports of audit --shard k/n into one",
    usage: "merge-reports [options] FILE...",
    examples: ["quartermaster merge-reports --out report.json shard-1.json shard-2.json"],
    exits:
      "Exit codes: 0 clean, 1 drift, 4 nodes not audited, 8 more nodes not audited than allowed (bits add: 13 = 1 + 4 + 8), as in the merged audit; 2 usage error, or shards that do not make up one audit.",
  },
  watch: {
    summary: "watch this machine continuously (--local): file events plus a periodic poll",
    usage: "watch --local [--manifest FILE | --manifests DIR --nodes NAME] [options]",
    examples: [
      "quartermaster watch --local --manifest /etc/quartermaster/node-spec.yaml --metrics-listen 127.0.0.1:9877",
    ],
    exits: "Exit codes: 0 stopped (SIGINT or SIGTERM), 2 usage or manifest error.",
  },
  report: {
    summary: "render a saved JSON report in another format",
    usage: "report --report FILE --format FORMAT [options]",
    examples: ["quartermaster report --report report.json --format markdown"],
    exits: "Exit codes: 0 written, 2 usage error or a report that cannot be read.",
  },
  "plan-shards": {
    summary: "how many audit shards for the selected nodes (JSON)",
    usage: "plan-shards [--shards N] [options]",
    examples: ["quartermaster plan-shards --shards 4"],
    exits: "Exit codes: 0 planned, 2 usage or manifest error.",
  },
  "manifest-diff": {
    summary: "each node's declared state before and after a manifest change (Markdown)",
    usage: "manifest-diff --base REF [options]",
    examples: ["quartermaster manifest-diff --base origin/main"],
    exits: "Exit codes: 0 written, 2 usage or manifest error.",
  },
  review: {
    summary: "act on a /quartermaster command in a pull request comment",
    usage: "review [--event FILE] [options]",
    examples: ['quartermaster review --event "$GITHUB_EVENT_PATH"'],
    exits:
      "Exit codes: 0 acted on (or nothing to do), 2 usage or manifest error, 4 an action failed or nodes were not audited.",
  },
};

/** Thrown by option parsing when -h/--help is given: the CLI prints `text` and exits 0. */
export class HelpRequested extends Error {
  override readonly name = "HelpRequested";
  constructor(readonly text: string) {
    super("help requested");
  }
}

function flagLabel(name: string, option: Options[string], flag?: FlagHelp): string {
  const value = option.type === "string" ? ` ${flag?.value ?? "VALUE"}` : "";
  return `${option.short ? `-${option.short}, ` : ""}--${name}${value}`;
}

/**
 * `usage: quartermaster audit …`, the command's flags with their defaults, examples and exit codes.
 */
export function commandHelp(command: string, options: Options): string {
  const info = COMMAND_HELP[command];
  const summary = info?.summary ?? command;
  const rows = Object.entries(options).map(([name, option]) => {
    // A command may say what a shared flag means for it.
    const flag = info?.flags?.[name] ?? FLAGS[name];
    const shown =
      option.type === "string" &&
      typeof option.default === "string" &&
      !flag?.text.includes("default")
        ? ` (default: ${option.default})`
        : "";
    return [flagLabel(name, option, flag), `${flag?.text ?? ""}${shown}`] as const;
  });
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  return [
    `usage: quartermaster ${info?.usage ?? `${command} [options]`}`,
    "",
    `${summary[0]!.toUpperCase()}${summary.slice(1)}.`,
    "",
    "Options:",
    ...rows.map(([label, text]) => `  ${label.padEnd(width)}${text}`),
    ...(info?.examples.length ? ["", "Examples:", ...info.examples.map((e) => `  ${e}`)] : []),
    "",
    info?.exits ?? EXIT_CODES,
    "",
  ].join("\n");
}

/** The short form shown under a usage error: how the command is used and where its help is. */
export function commandUsage(command: string): string {
  return `usage: quartermaster ${COMMAND_HELP[command]?.usage ?? `${command} [options]`}\nRun "quartermaster ${command} --help" for its options.\n`;
}
