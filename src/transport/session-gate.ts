import type { LoadedNode } from "../manifest/load.js";
import { runProcess } from "./launcher.js";
import {
  printedJumps,
  sshConfigHop,
  type HopResolver,
  type SshConfigFiles,
} from "./ssh-config-scan.js";
import { DEFAULT_MAX_SESSIONS, sshArgs, type SshOptions } from "./ssh.js";

/** Where a node's session starts (an sshd), and how many may start there at once. */
export interface SessionGates {
  /** The sshd a node's session begins at: its first jump host, else its own. */
  keyOf(node: LoadedNode): Promise<string>;
  /** The limit of a gate, taken from the first of its nodes to arrive. */
  limitOf(node: LoadedNode): number;
}

/** The first jump host of a ProxyJump list as `ssh -G` prints it, `ssh://` and `user@` left out. */
const firstJump = (list: string) =>
  list
    .split(",")[0]!
    .replace(/^ssh:\/\//, "")
    .replace(/^[^@]*@/, "");

/** The sshd a node's sessions start at: its first jump host, else its own `hostname:port`. */
const hopKey = (settings: {
  proxyjump?: string | undefined;
  hostname?: string | undefined;
  port?: string | number | undefined;
}) =>
  settings.proxyjump
    ? firstJump(settings.proxyjump)
    : settings.hostname && `${settings.hostname}:${settings.port ?? 22}`;

/**
 * The sshd a node's sessions start at, from `ssh -G`'s resolved settings: its first jump host as
 * printed (`user@` left out), else its own `hostname:port`.
 */
export function firstHop(resolved: string): string | undefined {
  const settings = new Map<string, string>();
  for (const line of resolved.split("\n")) {
    const space = line.indexOf(" ");
    if (space > 0) settings.set(line.slice(0, space).toLowerCase(), line.slice(space + 1).trim());
  }
  return hopKey({
    proxyjump: settings.get("proxyjump"),
    hostname: settings.get("hostname"),
    port: settings.get("port"),
  });
}

/**
 * The sshd a node's sessions start at, as the ssh client would resolve it (`ssh -G`, which reads
 * the ssh_config and connects nowhere): one process per call.
 */
export async function sessionGate(node: LoadedNode, options: SshOptions): Promise<string> {
  try {
    const run = await runProcess(
      options.sshBinary ?? "ssh",
      ["-G", ...sshArgs(node, options)],
      "",
      {
        timeoutMs: 10_000,
        maxOutputBytes: 1 << 20,
      },
    );
    return (run.exitCode === 0 && !run.stopped && firstHop(run.stdout)) || node.host;
  } catch {
    // Its session fails and says why; until then it counts as its own sshd.
    return node.host;
  }
}

/**
 * The most sessions any first hop of these nodes may take in the whole run, all shards together:
 * the smallest `ssh.max_sessions` among them.
 */
export function fleetSessionLimit(nodes: readonly LoadedNode[]): number {
  return nodes.reduce(
    (least, n) => Math.min(least, n.ssh.max_sessions ?? DEFAULT_MAX_SESSIONS),
    Infinity,
  );
}

/**
 * One shard's share of a first hop's sessions when `shards` shards run at once (a matrix runs
 * them in parallel): together they stay within the limit while `shards` is at most the limit.
 */
export const shardSessions = (limit: number, shards: number) =>
  Math.max(1, Math.floor(limit / shards));

/**
 * Sessions through one jump host (or one sshd) stay under its MaxStartups: at most the
 * `ssh.max_sessions` of its first node to arrive, shared out among `shards` parallel shards. A
 * manifest `proxy_jump` decides the first hop itself (a `-o ProxyJump` beats the ssh_config). Else,
 * when the ssh_configs in effect hold only plain `Host` blocks (ssh-config-scan.ts), their first
 * HostName, Port and ProxyJump (or ProxyCommand) that apply are taken as ssh takes them, with no
 * process started, and the key is the one `firstHop` gives for what `ssh -G` would print (checked
 * against the real ssh by a property test), so the shortcut never moves a node to another gate; a
 * node whose first jump setting is a ProxyCommand, or any line not read here (a Match, a quote, a
 * `%` token), leaves it to `ssh -G`, once per distinct argument list, since nothing else of a node
 * can change its answer.
 */
export function sshSessionGates(
  options: SshOptions,
  shards = 1,
  files: SshConfigFiles = { configFile: options.configFile },
): SessionGates {
  const resolved = new Map<string, Promise<string>>();
  let resolver: Promise<HopResolver | undefined> | undefined;
  const viaSsh = (node: LoadedNode, args: string[]) => {
    const key = JSON.stringify(args);
    let gate = resolved.get(key);
    if (!gate) resolved.set(key, (gate = sessionGate(node, options)));
    return gate;
  };
  return {
    keyOf: async (node) => {
      let args: string[];
      try {
        args = sshArgs(node, options);
      } catch {
        // Its session fails and says why; until then it counts as its own sshd.
        return node.host;
      }
      const jump = node.ssh.proxy_jump;
      if (jump && jump.toLowerCase() !== "none") return firstJump(printedJumps(jump));
      const hop = (await (resolver ??= sshConfigHop(files)))?.(node.host, node.ssh.port, jump);
      return hop ? hopKey(hop)! : viaSsh(node, args);
    },
    limitOf: (node) => shardSessions(node.ssh.max_sessions ?? DEFAULT_MAX_SESSIONS, shards),
  };
}
