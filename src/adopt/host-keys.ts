// Host keys for adopted hosts, copied from the known_hosts files ssh itself trusts for each host
// (as `ssh -G` resolves them through the ssh_config) or from --known-hosts: never scanned.
import { execa } from "execa";
import os from "node:os";
import path from "node:path";
import { existsSync } from "node:fs";

export interface KeyLookup {
  /** The name known_hosts holds the key under: `[host]:port` off port 22, HostKeyAlias if set. */
  name: string;
  files: string[];
  /** The jump hosts ssh goes through to reach it (`ProxyJump`), unless none. */
  proxyJump?: string;
}

/** Reads `ssh -G` output: the name ssh checks a host key under, and the files it checks. */
export function parseSshG(output: string): KeyLookup {
  const settings = new Map<string, string>();
  for (const line of output.split("\n")) {
    const space = line.indexOf(" ");
    if (space > 0) settings.set(line.slice(0, space).toLowerCase(), line.slice(space + 1).trim());
  }
  const host = settings.get("hostkeyalias") ?? settings.get("hostname") ?? "";
  const port = settings.get("port") ?? "22";
  const files = ["userknownhostsfile", "globalknownhostsfile"].flatMap((key) =>
    (settings.get(key) ?? "")
      .split(/\s+/)
      .filter(Boolean)
      .map((f) => f.replace(/^"(.*)"$/, "$1").replace(/^~(?=\/|$)/, os.homedir())),
  );
  const jump = settings.get("proxyjump");
  return {
    name: port === "22" ? host : `[${host}]:${port}`,
    files,
    ...(jump && jump !== "none" && { proxyJump: jump }),
  };
}

/** One jump host of a ProxyJump list, as ssh reads it: `[ssh://][user@]host[:port]`. */
export interface Jump {
  /** As the list writes it, to name it to the operator. */
  spec: string;
  host: string;
  user?: string;
  port?: number;
}

/** The jump hosts of a ProxyJump value, first hop first; `none` is no jump. */
export function jumpsOf(proxyJump: string | undefined): Jump[] {
  if (!proxyJump || proxyJump === "none") return [];
  return proxyJump.split(",").map((spec) => {
    const rest = spec.replace(/^ssh:\/\//, "");
    const at = rest.lastIndexOf("@");
    const user = at >= 0 ? rest.slice(0, at) : undefined;
    const hostPort = rest.slice(at + 1);
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(hostPort) ?? /^([^:]+)(?::(\d+))?$/.exec(hostPort);
    const host = m?.[1] ?? hostPort;
    const port = m?.[2] === undefined ? undefined : Number(m[2]);
    return { spec, host, ...(user && { user }), ...(port && { port }) };
  });
}

export interface KeyOptions {
  configFile?: string;
  /** --known-hosts: the only file keys are taken from. */
  knownHostsFile?: string;
}

/** The trusted key lines for one host, and where they were looked for. */
export async function trustedKeys(
  destination: string,
  ssh: { user?: string; port?: number; proxy_jump?: string },
  options: KeyOptions,
): Promise<{ lines: string[]; lookup: KeyLookup }> {
  const args = [
    ...(options.configFile ? ["-F", options.configFile] : []),
    "-G",
    ...(ssh.user ? ["-o", `User=${ssh.user}`] : []),
    ...(ssh.port ? ["-o", `Port=${ssh.port}`] : []),
    ...(ssh.proxy_jump ? ["-o", `ProxyJump=${ssh.proxy_jump}`] : []),
    "--",
    destination,
  ];
  const resolved = await execa("ssh", args, { reject: false });
  const lookup = parseSshG(resolved.stdout);
  if (options.knownHostsFile) lookup.files = [path.resolve(options.knownHostsFile)];
  const lines: string[] = [];
  for (const file of lookup.files.filter((f) => f !== "/dev/null" && existsSync(f))) {
    const found = await execa("ssh-keygen", ["-F", lookup.name, "-f", file], { reject: false });
    for (const line of found.stdout.split("\n"))
      if (line.trim() && !line.startsWith("#") && !lines.includes(line)) lines.push(line);
  }
  return { lines, lookup };
}

/** A jump host's trusted key lines, and where they were looked for. */
export interface JumpKeys {
  jump: Jump;
  lines: string[];
  lookup: KeyLookup;
}

// ProxyJump chains deeper than this are not followed: no fleet hops through more.
const MAX_HOPS = 8;

/**
 * The trusted keys of every jump host on the way to a host, first hop first: the jumps of
 * `proxyJump`, and the jumps each of them is reached through in turn (its own ProxyJump in the
 * ssh_config). `cache` holds each jump's lookup across hosts: a fleet behind one bastion asks once.
 */
export async function jumpHostKeys(
  proxyJump: string | undefined,
  options: KeyOptions,
  cache: Map<string, Promise<JumpKeys>>,
): Promise<JumpKeys[]> {
  const out: JumpKeys[] = [];
  const seen = new Set<string>();
  let pending = jumpsOf(proxyJump);
  for (let hop = 0; pending.length && hop < MAX_HOPS; hop++) {
    const next: Jump[] = [];
    for (const jump of pending) {
      if (seen.has(jump.spec)) continue;
      seen.add(jump.spec);
      let found = cache.get(jump.spec);
      if (!found) {
        found = trustedKeys(jump.host, jump, options).then((k) => ({ jump, ...k }));
        cache.set(jump.spec, found);
      }
      const keys = await found;
      out.push(keys);
      next.push(...jumpsOf(keys.lookup.proxyJump));
    }
    pending = next;
  }
  return out;
}
