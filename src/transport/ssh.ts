import { NodeAuditError } from "../errors.js";
import type { LoadedNode } from "../manifest/load.js";
import { lastLines, runProbeProcess, type ProcessFailure, type Transport } from "./transport.js";

export interface SshOptions {
  /** `--ssh-config FILE`. */
  configFile?: string;
  /** known_hosts kept in the manifest repository; the user's own is used when absent. */
  knownHostsFile?: string;
  connectTimeoutSeconds: number;
  /** The ssh client binary (tests and wrappers may point elsewhere). */
  sshBinary?: string;
}

/**
 * The ssh argument list. Everything from a manifest is either a validated `-o Key=value`
 * or follows `--`, so a host or user can never become an ssh option.
 */
export function sshArgs(node: LoadedNode, options: SshOptions): string[] {
  const ssh = node.ssh;
  const args = ["-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "LogLevel=ERROR"];
  args.push("-o", `ConnectTimeout=${ssh.connect_timeout ?? options.connectTimeoutSeconds}`);
  if (options.configFile) args.unshift("-F", options.configFile);
  if (options.knownHostsFile) args.push("-o", `UserKnownHostsFile=${options.knownHostsFile}`);
  if (ssh.user) args.push("-o", `User=${ssh.user}`);
  if (ssh.port) args.push("-o", `Port=${ssh.port}`);
  if (ssh.identity_file) args.push("-o", `IdentityFile=${ssh.identity_file}`, "-o", "IdentitiesOnly=yes");
  if (ssh.proxy_jump) args.push("-o", `ProxyJump=${ssh.proxy_jump}`);
  const command = ssh.become === "sudo" ? "sudo -n sh -s" : "sh -s";
  args.push("--", node.host, command);
  return args;
}

/** What ssh's exit status 255 and its messages mean for the node. */
export function classifySshFailure(node: LoadedNode, failure: ProcessFailure, timeoutMs: number): NodeAuditError {
  const { stderr } = failure;
  const host = node.host;
  const error = (kind: ConstructorParameters<typeof NodeAuditError>[1], message: string) => new NodeAuditError(node.name, kind, message);
  if (failure.timedOut) return error("timeout", `no complete answer from ${host} within ${timeoutMs / 1000}s; ssh killed, node not audited`);
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED/i.test(stderr)) {
    return error("host-key", `host key of ${host} has CHANGED since it was recorded in known_hosts: node not audited (if the host was rebuilt, update known_hosts after verifying the new key)`);
  }
  if (/Host key verification failed|No \S+ host key is known/i.test(stderr)) {
    return error("host-key", `host key of ${host} is not in known_hosts: node not audited (add it to known_hosts; Quartermaster never trusts on first use)`);
  }
  if (/Permission denied \(|Too many authentication failures/i.test(stderr)) {
    return error("auth", `authentication to ${host} failed: ${lastLines(stderr, 1)}`);
  }
  if (/sudo: (a password is required|a terminal is required|.*not in the sudoers|.*may not run sudo)/i.test(stderr)) {
    return error("sudo", `sudo -n refused on ${host} (become: sudo needs passwordless sudo for the probe): ${lastLines(stderr, 1)}`);
  }
  if (failure.exitCode === 255 && /Connection refused|No route to host|Network is unreachable|Could not resolve hostname|timed out|Connection closed by|Connection reset/i.test(stderr)) {
    return error("unreachable", `cannot connect to ${host}: ${lastLines(stderr, 1)}`);
  }
  if (failure.exitCode === 255) return error("unreachable", `ssh to ${host} failed: ${lastLines(stderr) || "exit 255"}`);
  return error("probe", `probe failed on ${host} (exit ${failure.exitCode}): ${lastLines(stderr) || "no error output"}`);
}

/** A node over the system OpenSSH client: the user's ssh_config, agent, ProxyJump and known_hosts apply. */
export function sshTransport(node: LoadedNode, options: SshOptions): Transport {
  const args = sshArgs(node, options);
  return {
    describe: () => `ssh ${node.host}`,
    run: (script, limits) =>
      runProbeProcess(node.name, options.sshBinary ?? "ssh", args, script, limits, (failure) => classifySshFailure(node, failure, limits.timeoutMs)),
  };
}
