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
  return { name: port === "22" ? host : `[${host}]:${port}`, files };
}

export interface KeyOptions {
  configFile?: string;
  /** --known-hosts: the only file keys are taken from. */
  knownHostsFile?: string;
}

/** The trusted key lines for one host, and where they were looked for. */
export async function trustedKeys(
  destination: string,
  ssh: { user?: string; port?: number },
  options: KeyOptions,
): Promise<{ lines: string[]; lookup: KeyLookup }> {
  const args = [
    ...(options.configFile ? ["-F", options.configFile] : []),
    "-G",
    ...(ssh.user ? ["-o", `User=${ssh.user}`] : []),
    ...(ssh.port ? ["-o", `Port=${ssh.port}`] : []),
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
