// Per-command help, generated from the flag table each command really parses (cli/flags.ts), so it
// cannot list a flag the command does not take nor describe one apart from how it is read.

/** How help shows a flag: its kind, short form, value placeholder and what it does. */
export interface FlagHelp {
  type: "string" | "boolean";
  short?: string;
  value?: string;
  help: string;
}

/** The audit's exit codes: the CLI's own help shows them; each command's help shows its own. */
export const EXIT_CODES =
  "Exit codes: 0 clean, 1 drift, 2 usage or manifest error, 4 nodes not audited, or with --strict items unknown, 8 more nodes not audited than allowed (--max-unaudited, audit.max_unaudited_for); bits add: 13 = 1 + 4 + 8.";

/** What each command does, the line it is used by, and examples that work as written. */
export const COMMAND_HELP: Record<
  string,
  {
    summary: string;
    usage: string;
    examples: string[];
    exits: string;
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
  },
  adopt: {
    summary: "write a layered manifest tree for an existing fleet from its inventory",
    usage: "adopt --inventory PATH [--manifests DIR] [options]",
    examples: [
      "quartermaster adopt --inventory inventory.yml --manifests fleet-manifests",
      "ansible-inventory -i hosts.ini --list > inv.json && quartermaster adopt --inventory inv.json",
    ],
    exits:
      "Exit codes: 0 every host adopted (or already declared), 2 usage, inventory or manifest error (nothing written), 4 some hosts left out (unreachable, no trusted host key, unusable snapshot; the rest are written).",
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

function flagLabel(name: string, flag: FlagHelp): string {
  const value = flag.type === "string" ? ` ${flag.value ?? "VALUE"}` : "";
  return `${flag.short ? `-${flag.short}, ` : ""}--${name}${value}`;
}

/**
 * `usage: quartermaster audit …`, the command's flags with what they do, examples and exit codes.
 */
export function commandHelp(command: string, flags: Record<string, FlagHelp>): string {
  const info = COMMAND_HELP[command];
  const summary = info?.summary ?? command;
  const rows = Object.entries(flags).map(([name, flag]) => [flagLabel(name, flag), flag.help]);
  const width = Math.max(...rows.map(([label]) => label!.length)) + 2;
  return [
    `usage: quartermaster ${info?.usage ?? `${command} [options]`}`,
    "",
    `${summary[0]!.toUpperCase()}${summary.slice(1)}.`,
    "",
    "Options:",
    ...rows.map(([label, text]) => `  ${label!.padEnd(width)}${text}`),
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
