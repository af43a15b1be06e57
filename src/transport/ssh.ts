import { NodeAuditError } from "../errors.js";
import type { LoadedNode } from "../manifest/load.js";
import { lastLines, runProbeProcess, type ProcessFailure, type Transport } from "./transport.js";

/**
 * Seconds ssh may take to connect and exchange banners, unless a node sets `ssh.connect_timeout`.
 */
export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 10;

export interface SshOptions {
  /** `--ssh-config FILE`. */
  configFile?: string;
  /** known_hosts kept in the manifest repository; the user's own is used when absent. */
  knownHostsFile?: string;
  connectTimeoutSeconds: number;
  /**
   * This node's overall limit, when it differs from the fleet's (`ssh.timeout` in the manifest).
   */
  timeoutMs?: number;
  /** The ssh client binary (tests and wrappers may point elsewhere). */
  sshBinary?: string;
}

/**
 * One value of a `-o Key=value` option, double-quoted so spaces stay inside it. ssh unquotes
 * `\"` and `\\`; a control character could end the option line, so it is refused.
 */
export function sshConfigValue(value: string): string {
  if (/\p{Cc}/u.test(value)) throw new Error(`${JSON.stringify(value)} holds a control character`);
  return `"${value.replace(/["\\]/g, "\\$&")}"`;
}

/** A file path as an ssh option value: `%` would start one of ssh's tokens. */
const sshPath = (file: string) => sshConfigValue(file.replaceAll("%", "%%"));

/** The remote command: the probe arrives on stdin; `sudo -n` fails instead of prompting. */
export function remoteCommand(node: LoadedNode): string {
  return node.ssh.become === "sudo" ? "sudo -n /bin/sh -s" : "sh -s";
}

/**
 * The ssh argument list. Everything from a manifest is either a quoted `-o Key=value` or
 * follows `--`, so a host, user or path can never become an ssh option.
 */
export function sshArgs(node: LoadedNode, options: SshOptions): string[] {
  const ssh = node.ssh;
  const args = options.configFile ? ["-F", options.configFile] : [];
  args.push(
    "-T",
    "-o",
    "BatchMode=yes",
    "-o",
    "StrictHostKeyChecking=yes",
    // An auditor writes nothing, known_hosts included.
    "-o",
    "UpdateHostKeys=no",
    "-o",
    "LogLevel=ERROR",
    "-o",
    `ConnectTimeout=${ssh.connect_timeout ?? options.connectTimeoutSeconds}`,
  );
  if (options.knownHostsFile)
    args.push("-o", `UserKnownHostsFile=${sshPath(options.knownHostsFile)}`);
  if (ssh.user) args.push("-o", `User=${sshConfigValue(ssh.user)}`);
  if (ssh.port) args.push("-o", `Port=${ssh.port}`);
  if (ssh.identity_file) {
    // `~` and ssh's `%` tokens stay available to the manifest's author.
    args.push(
      "-o",
      `IdentityFile=${sshConfigValue(ssh.identity_file)}`,
      "-o",
      "IdentitiesOnly=yes",
    );
  }
  if (ssh.proxy_jump) args.push("-o", `ProxyJump=${sshConfigValue(ssh.proxy_jump)}`);
  args.push("--", node.host, remoteCommand(node));
  return args;
}

const SUDO_REFUSED =
  /sudo: (a password is required|a terminal is required|.*is not in the sudoers|.*may not run sudo|sorry, user .* is not allowed)/i;

/**
 * What a failed ssh run means for the node: ssh's exit status 255 and its messages, sudo's
 * refusals.
 */
export function classifySshFailure(
  node: LoadedNode,
  failure: ProcessFailure,
  timeoutMs: number,
): NodeAuditError {
  const { stderr } = failure;
  const host = node.host;
  const error = (kind: ConstructorParameters<typeof NodeAuditError>[1], message: string) =>
    new NodeAuditError(node.name, kind, message);
  if (failure.timedOut) {
    return error(
      "timeout",
      `timed out after ${timeoutMs / 1000}s without a complete answer from ${host}: ssh was killed, node not audited`,
    );
  }
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED/i.test(stderr)) {
    return error(
      "host-key",
      `host key of ${host} has CHANGED since it was recorded in known_hosts: node not audited (if the host was rebuilt, verify the new key, then update known_hosts)`,
    );
  }
  if (/Host key verification failed|No \S+ host key is known/i.test(stderr)) {
    return error(
      "host-key",
      `host key of ${host} is not in known_hosts: node not audited (add its verified key to known_hosts; Quartermaster never trusts on first use)`,
    );
  }
  if (/Permission denied \(|Too many authentication failures/i.test(stderr)) {
    return error(
      "auth",
      `authentication to ${host} failed, node not audited: ${lastLines(stderr, 1)}`,
    );
  }
  if (SUDO_REFUSED.test(stderr)) {
    return error(
      "sudo",
      `sudo -n refused on ${host}, node not audited (become: sudo needs passwordless sudo for /bin/sh): ${lastLines(stderr, 1)}`,
    );
  }
  if (node.ssh.become === "sudo" && /sudo: (command )?not found/i.test(stderr)) {
    return error("sudo", `sudo is not installed on ${host} (become: sudo), node not audited`);
  }
  if (failure.exitCode === 255) {
    const reason = lastLines(stderr, 1) || "ssh exited with status 255";
    return error("unreachable", `cannot connect to ${host}, node not audited: ${reason}`);
  }
  return error(
    "probe",
    `probe failed on ${host} (exit ${failure.exitCode}), node not audited: ${lastLines(stderr) || "no error output"}`,
  );
}

/**
 * A node over the system OpenSSH client: the user's ssh_config, agent, ProxyJump and known_hosts
 * apply.
 */
export function sshTransport(node: LoadedNode, options: SshOptions): Transport {
  return {
    describe: () => `ssh ${node.host}`,
    run: async (script, limits) => {
      let args: string[];
      try {
        args = sshArgs(node, options);
      } catch (error) {
        throw new NodeAuditError(
          node.name,
          "probe",
          `ssh settings of ${node.name} are unusable, node not audited: ${(error as Error).message}`,
        );
      }
      const nodeLimits = { ...limits, timeoutMs: options.timeoutMs ?? limits.timeoutMs };
      return runProbeProcess(
        node.name,
        options.sshBinary ?? "ssh",
        args,
        script,
        nodeLimits,
        (failure) => classifySshFailure(node, failure, nodeLimits.timeoutMs),
      );
    },
  };
}
