import { io } from "../io.js";
import { runSnapshot } from "../../runs/snapshot.js";
import { visible } from "../../text/escape.js";
import { ExitBit } from "../exit.js";
import { writeOut } from "../output.js";
import { checkOut, OUT_FLAG } from "../output-options.js";
import { parseFlags, saying, type Config } from "../flags.js";
import {
  CONCURRENCY_FLAG,
  MANIFEST_FLAGS,
  manifestSource,
  NO_EPHEMERAL_RANGE_FLAG,
  nodeGlobs,
  PACKAGES_FLAG,
  SELECT_FLAGS,
  SSH_CONFIG_FLAG,
  TIMEOUT_FLAG,
} from "../options.js";

const SNAPSHOT_FLAGS = {
  ...MANIFEST_FLAGS,
  manifests: saying(
    MANIFEST_FLAGS.manifests,
    "the manifest tree the node is declared in: its declared files and units are snapshot too (--local alone snapshots this machine as a new node; --node finds the tree as audit does)",
  ),
  node: {
    ...nodeGlobs(
      "LIST",
      "node names or globs, comma-separated: one YAML document per node, keeping its host, groups and ssh",
    ),
    required: { message: "snapshot needs --local or --node NAME", unless: ["local"] },
  },
  local: SELECT_FLAGS.local,
  category: SELECT_FLAGS.category,
  out: OUT_FLAG,
  "ssh-config": SSH_CONFIG_FLAG,
  timeout: TIMEOUT_FLAG,
  concurrency: saying(
    CONCURRENCY_FLAG,
    "nodes read at once (default: 32); through one jump host, at most its ssh.max_sessions (default: 32 over its one shared connection, 8 when its nodes connect one by one)",
  ),
  packages: PACKAGES_FLAG,
  "no-ephemeral-range": NO_EPHEMERAL_RANGE_FLAG,
};

type SnapshotConfig = Config<typeof SNAPSHOT_FLAGS>;

/** `snapshot`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function snapshotConfig(argv: string[]): SnapshotConfig {
  return parseFlags("snapshot", argv, SNAPSHOT_FLAGS).config;
}

export async function snapshotCommand(argv: string[]): Promise<number> {
  const config = snapshotConfig(argv);
  await checkOut(config.out);
  const outcomes = await runSnapshot({
    source: manifestSource(config),
    nodes: config.node,
    local: config.local,
    categories: config.category,
    sshConfig: config["ssh-config"],
    timeout: config.timeout,
    concurrency: config.concurrency,
    packages: config.packages,
    ephemeralAsRange: !config["no-ephemeral-range"],
    say: (text) => io().stderr.write(`quartermaster snapshot: ${visible(text)}\n`),
  });
  for (const { failure } of outcomes)
    if (failure) io().stderr.write(`quartermaster snapshot: ${visible(failure)}\n`);
  // Several nodes: one YAML document each, in the order --node selected them.
  const text = outcomes.flatMap(({ text }) => (text === undefined ? [] : [text])).join("---\n");
  if (config.out) await writeOut(config.out, text);
  else io().stdout.write(text);
  return outcomes.some((o) => o.failure) ? ExitBit.unaudited : 0;
}
