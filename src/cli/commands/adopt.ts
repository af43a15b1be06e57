// `quartermaster adopt`: an inventory in, a layered manifest tree out (runs/adopt.ts).
import { io } from "../io.js";
import path from "node:path";
import { isGlob } from "../../adopt/globs.js";
import { runAdopt } from "../../runs/adopt.js";
import { defaultTreeToWrite } from "../../runs/fleet.js";
import { visible } from "../../text/escape.js";
import { UsageError } from "../../errors.js";
import { NodeSpec } from "../../manifest/schema.js";
import { ExitBit } from "../exit.js";
import { PACKAGES_MODES } from "../../domains/snapshot-options.js";
import { checkedFlag, choiceFlag, parseFlags, saying, textFlag } from "../flags.js";
import {
  CONCURRENCY_FLAG,
  NO_EPHEMERAL_RANGE_FLAG,
  SSH_CONFIG_FLAG,
  TIMEOUT_FLAG,
} from "../options.js";
import { Progress } from "../progress.js";

const say = (line: string) => io().stderr.write(`${visible(line)}\n`);

const ADOPT_FLAGS = {
  inventory: {
    ...textFlag(
      "PATH",
      "the hosts to adopt: an Ansible inventory file or folder (INI, YAML or ansible-inventory --list JSON) with the group_vars/ and host_vars/ beside it, an ssh_config or one host a line",
    ),
    required: { message: "adopt needs --inventory PATH" },
  },
  manifests: textFlag(
    "DIR",
    "the manifest tree to write into (default: fleet-manifests); existing files are never changed",
  ),
  "ssh-config": SSH_CONFIG_FLAG,
  "known-hosts": textFlag(
    "FILE",
    "take host keys from FILE only (default: the known_hosts files ssh uses for each host)",
  ),
  concurrency: saying(
    CONCURRENCY_FLAG,
    "hosts snapshot at once (default: 32); through one jump host, at most its ssh.max_sessions (default: 32 over its one shared connection, 8 when its nodes connect one by one)",
  ),
  timeout: saying(TIMEOUT_FLAG, "per-host time limit, connection and snapshot (default: 60)"),
  packages: choiceFlag(
    PACKAGES_MODES,
    "MODE",
    "which installed packages are declared: chosen (those the package manager marks as installed on purpose, any version), all (every one, any version), versions (every one, pinned) or none (default: chosen)",
    "chosen",
  ),
  pin: checkedFlag(
    "PACKAGE,…",
    "declare these packages at their live version, the rest as --packages says",
    (given) => new Set(given.split(",").filter(Boolean)),
  ),
  "no-ephemeral-range": NO_EPHEMERAL_RANGE_FLAG,
  files: checkedFlag(
    "PATH,…",
    "declare these config files on every host at their live contents, mode, owner and group (a secret or root-only file by its sha256), factored into layers like every other value; a glob (*, ?, [) is expanded by each host's shell, at most 200 matches",
    (given) => listOf("--files", given, (path) => ({ files: [{ path }] })),
  ),
  units: checkedFlag(
    "UNIT,…",
    "declare these systemd units on every host at their live state, unit file and drop-ins, factored into layers; a glob (*, ?, [) matches the unit files systemd knows on each host, at most 200 matches",
    (given) =>
      listOf("--units", given, (name) => ({
        // A glob is checked as the names it can match: each wildcard standing for one character.
        systemd: { units: [{ name: isGlob(name) ? name.replace(/\[[^\]]*\]|[*?]/g, "x") : name }] },
      })),
  ),
};

/** A comma-separated flag's items, each checked as the manifest would declare it. */
function listOf(flag: string, given: string, declared: (item: string) => object): string[] {
  const items = [...new Set(given.split(",").filter(Boolean))];
  for (const item of items) {
    const checked = NodeSpec.safeParse(declared(item));
    if (!checked.success)
      throw new UsageError(`${flag}: ${JSON.stringify(item)}: ${checked.error.issues[0]!.message}`);
  }
  return items;
}

/** `adopt`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function adoptConfig(argv: string[]) {
  return parseFlags("adopt", argv, ADOPT_FLAGS).config;
}

export async function adoptCommand(argv: string[]): Promise<number> {
  const config = adoptConfig(argv);
  const manifests = config.manifests ?? defaultTreeToWrite();
  const result = await runAdopt({
    inventory: config.inventory,
    manifests,
    sshConfig: config["ssh-config"],
    knownHosts: config["known-hosts"],
    concurrency: config.concurrency,
    timeout: config.timeout,
    packages: config.packages,
    ...(config.pin && { pin: config.pin }),
    declare: { files: config.files ?? [], units: config.units ?? [] },
    ephemeralAsRange: !config["no-ephemeral-range"],
    say,
    progress: (total) => (total > 1 && io().stderr.isTTY ? new Progress(total) : undefined),
  });
  for (const line of result.leftOut) say(line);
  for (const rel of result.written) io().stdout.write(`wrote ${path.join(manifests, rel)}\n`);
  for (const rel of result.extended)
    io().stdout.write(`added files or units to ${path.join(manifests, rel)}\n`);
  const already = result.alreadyDeclared;
  say(
    `${result.adopted.length} of ${result.inventoryHosts} hosts adopted${already ? `, ${already} already declared` : ""}, ${result.leftOut.length} left out${result.latent ? `, ${result.latent} value${result.latent === 1 ? "" : "s"} the next boot or restart changes, commented` : ""}`,
  );
  return result.leftOut.length ? ExitBit.unaudited : 0;
}
