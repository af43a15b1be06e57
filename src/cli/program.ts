import {
  ForgeError,
  InputFileError,
  InventoryErrors,
  ManifestErrors,
  StateError,
  UsageError,
} from "../errors.js";
import { nearest } from "../manifest/suggest.js";
import { visible } from "../text/escape.js";
import packageJson from "../../package.json" with { type: "json" };
import { ExitBit } from "./exit.js";
import { COMMAND_HELP, EXIT_CODES, HelpRequested, commandUsage } from "./help.js";
import { io, withIo, type Io } from "./io.js";
import { boundHeapGrowth } from "./heap.js";
import { guardOutput } from "./stdout.js";

// Messages quote manifest and host text (keys, values, URLs): escaped where they reach the
// terminal.
const say = (text: string) => io().stderr.write(`${visible(text, { multiline: true })}\n`);

// Commands load on demand: an on-node audit never pays for the GitHub client's start-up.
const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  audit: async (argv) => (await import("./commands/audit.js")).auditCommand(argv),
  diff: async (argv) => (await import("./commands/diff.js")).diffCommand(argv),
  snapshot: async (argv) => (await import("./commands/snapshot.js")).snapshotCommand(argv),
  adopt: async (argv) => (await import("./commands/adopt.js")).adoptCommand(argv),
  validate: async (argv) => (await import("./commands/validate.js")).validateCommand(argv),
  propose: async (argv) => (await import("./commands/propose.js")).proposeCommand(argv),
  "merge-reports": async (argv) =>
    (await import("./commands/merge-reports.js")).mergeReportsCommand(argv),
  watch: async (argv) => (await import("./commands/watch.js")).watchCommand(argv),
  report: async (argv) => (await import("./commands/report.js")).reportCommand(argv),
  "plan-shards": async (argv) =>
    (await import("./commands/plan-shards.js")).planShardsCommand(argv),
  "manifest-diff": async (argv) =>
    (await import("./commands/manifest-diff.js")).manifestDiffCommand(argv),
  review: async (argv) => (await import("./commands/review.js")).reviewCommand(argv),
};

const USAGE = `usage: quartermaster <command> [options]

${Object.keys(COMMANDS)
  .map((name) => `  ${name.padEnd(16)}${COMMAND_HELP[name]!.summary}`)
  .join("\n")}

Run "quartermaster <command> --help" (or "quartermaster help <command>") for a command's options.
"quartermaster --version" (-V) prints the version.
${EXIT_CODES}
`;

/**
 * Runs the CLI on `argv` and answers its exit code; writes only to `streams` (the process's by
 * default) and reads the environment only from them.
 */
export function main(argv: string[], streams: Io = io()): Promise<number> {
  guardOutput(streams);
  return withIo(streams, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === "--version" || first === "-V") {
    io().stdout.write(`quartermaster ${packageJson.version}\n`);
    return 0;
  }
  if (!first || first === "--help" || first === "-h" || (first === "help" && rest.length === 0)) {
    io().stdout.write(USAGE);
    return first ? 0 : ExitBit.usage;
  }
  // `help audit` is `audit --help`.
  const [name, args] = first === "help" ? [rest[0]!, ["--help"]] : [first, rest];
  const command = COMMANDS[name];
  try {
    if (!command) {
      const suggestion = nearest(name, Object.keys(COMMANDS));
      throw new UsageError(
        `unknown command "${name}"${suggestion ? ` (did you mean "${suggestion}"?)` : ""}`,
      );
    }
    boundHeapGrowth(name);
    return await command(args);
  } catch (error) {
    if (error instanceof ManifestErrors) {
      const count = error.errors.length;
      say(`${error.message}\n${count} manifest error${count === 1 ? "" : "s"}; nothing audited`);
      return ExitBit.usage;
    }
    if (error instanceof InventoryErrors) {
      const count = error.errors.length;
      say(`${error.message}\n${count} inventory error${count === 1 ? "" : "s"}; nothing adopted`);
      return ExitBit.usage;
    }
    if (error instanceof InputFileError) {
      say(`quartermaster: ${error.file}: ${error.message}`);
      return ExitBit.usage;
    }
    if (error instanceof ForgeError) {
      say(`quartermaster: ${error.message}`);
      return ExitBit.unaudited;
    }
    if (error instanceof StateError) {
      say(`quartermaster: ${error.file}: ${error.message}`);
      return ExitBit.unaudited;
    }
    if (error instanceof HelpRequested) {
      io().stdout.write(error.text);
      return 0;
    }
    if (error instanceof UsageError) {
      // A mistake in a command's flags shows that command's usage, not every command's.
      say(`quartermaster: ${error.message}`);
      const usage = error.command ?? (command ? name : undefined);
      io().stderr.write(`\n${usage ? commandUsage(usage) : USAGE}`);
      return ExitBit.usage;
    }
    // An unexpected failure audited nothing trustworthy: the same code as a manifest error.
    say(
      `quartermaster: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return ExitBit.usage;
  }
}
