import type { LoadedNode } from "../manifest/load.js";
import { runProcess } from "./launcher.js";
import {
  printedJumps,
  sshConfigHop,
  type HopResolver,
  type SshConfigFiles,
} from "./ssh-config-scan.js";
import { JumpConnections } from "./jump-connection.js";
import {
  DEFAULT_MAX_CHANNELS,
  DEFAULT_MAX_SESSIONS,
  sshArgs,
  type JumpChannels,
  type SshOptions,
} from "./ssh.js";

/** Where a node's session starts (an sshd), and how many may start there at once. */
export interface SessionGates {
  /** The sshd a node's session begins at: its first jump host, else its own. */
  keyOf(node: LoadedNode): Promise<string>;
  /**
   * The limit of a gate now, given the first of its nodes to arrive: it may change during the run
   * (a jump host's shared connection ending).
   */
  limitOf(node: LoadedNode, key: string): number;
}

/** Where a node's sessions start: the gate's key, and the ProxyJump list that leads there. */
interface Hop {
  key: string;
  jumps?: string;
}

/** The first jump host of a ProxyJump list as `ssh -G` prints it, `ssh://` and `user@` left out. */
const firstJump = (list: string) =>
  list
    .split(",")[0]!
    .replace(/^ssh:\/\//, "")
    .replace(/^[^@]*@/, "");

/** The sshd a node's sessions start at: its first jump host, else its own `hostname:port`. */
const hopOf = (settings: {
  proxyjump?: string | undefined;
  hostname?: string | undefined;
  port?: string | number | undefined;
}): Hop | undefined =>
  settings.proxyjump
    ? { key: firstJump(settings.proxyjump), jumps: settings.proxyjump }
    : settings.hostname
      ? { key: `${settings.hostname}:${settings.port ?? 22}` }
      : undefined;

/** Where a node's sessions start, from `ssh -G`'s resolved settings. */
function resolvedHop(resolved: string): Hop | undefined {
  const settings = new Map<string, string>();
  for (const line of resolved.split("\n")) {
    const space = line.indexOf(" ");
    if (space > 0) settings.set(line.slice(0, space).toLowerCase(), line.slice(space + 1).trim());
  }
  return hopOf({
    proxyjump: settings.get("proxyjump"),
    hostname: settings.get("hostname"),
    port: settings.get("port"),
  });
}

/**
 * The sshd a node's sessions start at, from `ssh -G`'s resolved settings: its first jump host as
 * printed (`user@` left out), else its own `hostname:port`.
 */
export const firstHop = (resolved: string): string | undefined => resolvedHop(resolved)?.key;

/** Where a node's sessions start as `ssh -G` resolves it (it connects nowhere): one process. */
async function resolvedHopOf(node: LoadedNode, options: SshOptions): Promise<Hop> {
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
    return (run.exitCode === 0 && !run.stopped && resolvedHop(run.stdout)) || { key: node.host };
  } catch {
    // Its session fails and says why; until then it counts as its own sshd.
    return { key: node.host };
  }
}

/**
 * The sshd a node's sessions start at, as the ssh client would resolve it (`ssh -G`, which reads
 * the ssh_config and connects nowhere): one process per call.
 */
export const sessionGate = async (node: LoadedNode, options: SshOptions): Promise<string> =>
  (await resolvedHopOf(node, options)).key;

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

/** The gates of a run over ssh, and the route of a node's sessions through its jump host. */
export interface SshSessionGates extends SessionGates {
  channels: JumpChannels;
  /**
   * The first jump host a node's sessions go through (`user@` left out), from the manifest's
   * `proxy_jump` or the ssh_config as `ssh -G` resolves it; undefined when it connects directly.
   */
  jumpHostOf(node: LoadedNode): Promise<string | undefined>;
}

/**
 * Sessions through one jump host (or one sshd) stay under what it allows: at most the
 * `ssh.max_sessions` of its first node to arrive, shared out among `shards` parallel shards, each
 * shard holding its own connection to the jump host. Unset, the limit is DEFAULT_MAX_CHANNELS while
 * the jump host's shared connection (`connections`) carries its nodes, DEFAULT_MAX_SESSIONS when
 * each starts one of its own (MaxStartups counts those). A
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
  connections?: JumpConnections,
): SshSessionGates {
  const resolved = new Map<string, Promise<Hop>>();
  let resolver: Promise<HopResolver | undefined> | undefined;
  // The jump list of each jump host's first node to arrive: its limit follows that connection.
  const jumpLists = new Map<string, string>();
  const viaSsh = (node: LoadedNode, args: string[]) => {
    const key = JSON.stringify(args);
    let hop = resolved.get(key);
    if (!hop) resolved.set(key, (hop = resolvedHopOf(node, options)));
    return hop;
  };
  const route = async (node: LoadedNode): Promise<Hop> => {
    let args: string[];
    try {
      args = sshArgs(node, options);
    } catch {
      // Its session fails and says why; until then it counts as its own sshd.
      return { key: node.host };
    }
    const jump = node.ssh.proxy_jump;
    if (jump && jump.toLowerCase() !== "none") {
      const jumps = printedJumps(jump);
      return { key: firstJump(jumps), jumps };
    }
    const hop = (await (resolver ??= sshConfigHop(files)))?.(node.host, node.ssh.port, jump);
    return hop ? hopOf(hop)! : viaSsh(node, args);
  };
  return {
    keyOf: async (node) => {
      const hop = await route(node);
      if (hop.jumps !== undefined && connections) {
        if (!jumpLists.has(hop.key)) jumpLists.set(hop.key, hop.jumps);
        // Opened (or given up) before the gate's limit is read.
        await connections.proxyCommand(hop.jumps);
      }
      return hop.key;
    },
    limitOf: (node, key) => {
      const jumps = jumpLists.get(key);
      const channels = jumps !== undefined && connections?.sharedNow(jumps) === true;
      const limit = channels ? DEFAULT_MAX_CHANNELS : DEFAULT_MAX_SESSIONS;
      return shardSessions(node.ssh.max_sessions ?? limit, shards);
    },
    jumpHostOf: async (node) => {
      const hop = await route(node);
      return hop.jumps === undefined ? undefined : hop.key;
    },
    channels: {
      proxyCommand: async (node) => {
        const { jumps } = await route(node);
        return jumps === undefined ? undefined : connections?.proxyCommand(jumps);
      },
      refusesForwarding: async (node, words) => {
        const { jumps } = await route(node);
        if (jumps !== undefined) connections?.refusesForwarding(jumps, words);
      },
      lost: async (node) => {
        const { jumps } = await route(node);
        return jumps !== undefined && connections !== undefined && connections.lost(jumps);
      },
    },
  };
}

/** A run's gates over ssh with its jump hosts' shared connections, which `close` ends. */
export interface SharedSshSessions extends SshSessionGates {
  close(): Promise<void>;
}

/**
 * What `audit`, `snapshot` and `adopt` alike reach nodes over ssh through: one shared connection
 * per jump host for the run (jump-connection.ts), the gates that follow it, and each node's route
 * through it (`channels`). `say` hears when a jump host's nodes connect one by one after all. The
 * caller closes it when the run ends, however it ends.
 */
export function sharedSshSessions(
  options: SshOptions,
  shards?: number,
  say?: (text: string) => void,
): SharedSshSessions {
  const connections = new JumpConnections({ ...options, ...(say && { say }) });
  return {
    ...sshSessionGates(options, shards, undefined, connections),
    close: () => connections.close(),
  };
}
