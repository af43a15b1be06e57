import { setTimeout as sleep } from "node:timers/promises";
import { NodeAuditError } from "../errors.js";
import type { LoadedNode } from "../manifest/load.js";
import { PROXY_JUMP } from "../manifest/schema.js";
import type { CertificateCheck } from "./ssh-certificate.js";
import { classifySshFailure, isRetriedClass } from "./ssh-failure.js";
import { runProbeProcess, type Transport } from "./transport.js";

/**
 * Seconds ssh may take to connect and exchange banners, unless a node sets `ssh.connect_timeout`.
 */
export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 10;

/**
 * Sessions started at once through one sshd (a node's first jump host, else its own), unless
 * `ssh.max_sessions` says otherwise: sshd's default `MaxStartups 10:30:100` drops none below 10.
 */
export const DEFAULT_MAX_SESSIONS = 8;

/** How often, and how patiently, a transient connection failure is tried again. */
export interface RetryPolicy {
  /** Connection attempts in all, the first included. */
  tries: number;
  /** Wait before the second attempt; it doubles for each further one, up to `maxDelayMs`. */
  firstDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { tries: 8, firstDelayMs: 250, maxDelayMs: 4000 };

// A retry is not worth starting with less than this left of the node's time budget.
const MIN_TRY_MS = 1000;

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
  retry?: RetryPolicy;
  /** Tells a refused certificate (expired, not yet valid, principals) from other refusals. */
  certificates?: CertificateCheck;
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
  // A short-lived certificate for the key, and an agent holding it, as ssh_config would name them.
  if (ssh.certificate_file)
    args.push("-o", `CertificateFile=${sshConfigValue(ssh.certificate_file)}`);
  if (ssh.identity_agent) args.push("-o", `IdentityAgent=${sshConfigValue(ssh.identity_agent)}`);
  if (ssh.proxy_jump) {
    // ssh takes ProxyJump unquoted (OpenSSH 9.2 refuses a quoted one): only a value the schema
    // accepts (no spaces, quotes, control characters or leading `-`) is passed.
    if (!PROXY_JUMP.test(ssh.proxy_jump))
      throw new Error(`proxy_jump ${JSON.stringify(ssh.proxy_jump)} is not a jump host list`);
    args.push("-o", `ProxyJump=${ssh.proxy_jump}`);
  }
  args.push("--", node.host, remoteCommand(node));
  return args;
}

/**
 * Wait before the next attempt, after `failedTries` failed: exponential, with jitter (between half
 * and all of it) so nodes dropped together do not all come back together.
 */
export function retryDelayMs(
  failedTries: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  const full = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** (failedTries - 1));
  return Math.round(full / 2 + (random() * full) / 2);
}

/** The ssh arguments of a node, or the node's failure when its settings cannot make them. */
function usableSshArgs(node: LoadedNode, options: SshOptions): string[] {
  try {
    return sshArgs(node, options);
  } catch (error) {
    throw new NodeAuditError(
      node.name,
      "probe",
      `ssh settings of ${node.name} are unusable, node not audited: ${(error as Error).message}`,
    );
  }
}

/**
 * A refusal while ssh offered a certificate, as the certificate's own failure (class
 * `certificate`, never retried); any other failure as it is.
 */
async function certificateReason(
  error: unknown,
  node: LoadedNode,
  args: readonly string[],
  options: SshOptions,
): Promise<unknown> {
  if (!(error instanceof NodeAuditError) || error.sshClass !== "auth" || !options.certificates)
    return error;
  const refusal = await options.certificates.explain(node.host, args);
  if (!refusal) return error;
  const words = refusal.ofTheFile ? refusal.message : `${refusal.message}: ${error.message}`;
  return new NodeAuditError(node.name, "auth", words, { sshClass: "certificate" });
}

/**
 * A node over the system OpenSSH client: the user's ssh_config, agent, ProxyJump and known_hosts
 * apply.
 */
export function sshTransport(node: LoadedNode, options: SshOptions): Transport {
  return {
    describe: () => `ssh ${node.host}`,
    run: async (script, limits) => {
      const args = usableSshArgs(node, options);
      const binary = options.sshBinary ?? "ssh";
      const retry = options.retry ?? DEFAULT_RETRY;
      const timeoutMs = options.timeoutMs ?? limits.timeoutMs;
      const started = performance.now();
      // Every attempt, and every wait between them, comes out of the node's one time budget.
      for (let tries = 1; ; tries++) {
        const left = Math.max(1, Math.round(timeoutMs - (performance.now() - started)));
        try {
          const run = await runProbeProcess(
            node.name,
            binary,
            args,
            script,
            { ...limits, timeoutMs: left },
            (failure) => classifySshFailure(node, failure, timeoutMs),
          );
          return { ...run, durationMs: performance.now() - started, timeoutMs, tries };
        } catch (caught) {
          const error = await certificateReason(caught, node, args, options);
          const delay = retryDelayMs(tries, retry);
          const spent = performance.now() - started;
          const transient = error instanceof NodeAuditError && isRetriedClass(error.sshClass);
          if (!transient || tries >= retry.tries || timeoutMs - spent - delay < MIN_TRY_MS) {
            if (error instanceof NodeAuditError) error.tries = tries;
            throw error;
          }
          await sleep(delay);
        }
      }
    },
  };
}
