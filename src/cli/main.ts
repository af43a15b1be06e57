#!/usr/bin/env node
import { ForgeError, ManifestErrors, UsageError } from "../errors.js";
import { visible } from "../text/escape.js";
import { ExitBit } from "./exit.js";

// Messages quote manifest and host text (keys, values, URLs): escaped where they reach the terminal.
const say = (text: string) => process.stderr.write(`${visible(text, { multiline: true })}\n`);

// Commands load on demand: an on-node audit never pays for the GitHub client's start-up.
const COMMANDS: Record<string, { run: (argv: string[]) => Promise<number>; summary: string }> = {
  audit: { run: async (argv) => (await import("./commands/audit.js")).auditCommand(argv), summary: "read-only audit of the selected nodes" },
  diff: { run: async (argv) => (await import("./commands/diff.js")).diffCommand(argv), summary: "-want +got view of one domain's drift" },
  snapshot: { run: async (argv) => (await import("./commands/snapshot.js")).snapshotCommand(argv), summary: "print a node-spec YAML of a node's live state" },
  validate: { run: async (argv) => (await import("./commands/validate.js")).validateCommand(argv), summary: "check the manifest tree" },
  propose: { run: async (argv) => (await import("./commands/propose.js")).proposeCommand(argv), summary: "open, update or close pull requests from an audit report" },
  "merge-reports": { run: async (argv) => (await import("./commands/merge-reports.js")).mergeReportsCommand(argv), summary: "merge the reports of audit --shard k/n into one" },
  watch: { run: async (argv) => (await import("./commands/watch.js")).watchCommand(argv), summary: "watch this machine continuously (--local): file events plus a periodic poll" },
  report: { run: async (argv) => (await import("./commands/report.js")).reportCommand(argv), summary: "render a saved JSON report in another format" },
  "plan-shards": { run: async (argv) => (await import("./commands/plan-shards.js")).planShardsCommand(argv), summary: "how many audit shards for the selected nodes (JSON)" },
  "manifest-diff": { run: async (argv) => (await import("./commands/manifest-diff.js")).manifestDiffCommand(argv), summary: "each node's declared state before and after a manifest change (Markdown)" },
  review: { run: async (argv) => (await import("./commands/review.js")).reviewCommand(argv), summary: "act on a /quartermaster command in a pull request comment" },
};

const USAGE = `usage: quartermaster <command> [options]

${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(14)}${c.summary}`)
  .join("\n")}

Common options: --manifests DIR (default fleet-manifests), --nodes a,web-*, --category sysctl,files,
--local (audit this machine), --format text|json|markdown|junit|prometheus|events|github, --out FILE.
Exit codes: 0 clean, 1 drift, 2 usage or manifest error, 4 nodes not audited (5 = 1 + 4).
`;

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(USAGE);
    return name ? 0 : ExitBit.usage;
  }
  const command = COMMANDS[name];
  try {
    if (!command) throw new UsageError(`unknown command "${name}"`);
    if (rest.includes("--help")) {
      process.stdout.write(USAGE);
      return 0;
    }
    return await command.run(rest);
  } catch (error) {
    if (error instanceof ManifestErrors) {
      const count = error.errors.length;
      say(`${error.message}\n${count} manifest error${count === 1 ? "" : "s"}; nothing audited`);
      return ExitBit.usage;
    }
    if (error instanceof ForgeError) {
      say(`quartermaster: ${error.message}`);
      return ExitBit.unaudited;
    }
    if (error instanceof UsageError) {
      say(`quartermaster: ${error.message}`);
      process.stderr.write(`\n${USAGE}`);
      return ExitBit.usage;
    }
    // An unexpected failure audited nothing trustworthy: the same code as a manifest error.
    say(`quartermaster: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return ExitBit.usage;
  }
}

process.exitCode = await main(process.argv.slice(2));
