import { NodeAuditError, type NodeFailureKind, type SshFailureClass } from "../errors.js";
import type { LoadedNode } from "../manifest/load.js";
import { howItEnded, lastLines, type ProcessFailure } from "./transport.js";

// ssh's words for each class, as OpenSSH 9 prints them directly and through a jump host's
// `-W` channel; the first line of stderr that matches one decides.
const CLASS_WORDS: ReadonlyArray<readonly [SshFailureClass, RegExp]> = [
  [
    "host-key",
    /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed|No \S+ host key is known/i,
  ],
  ["auth", /Permission denied \(|Too many authentication failures/i],
  ["refused-by-target", /Connection refused/],
  [
    "name-resolution",
    /Could not resolve hostname|Temporary failure in name resolution|Name or service not known|No address associated with hostname/,
  ],
  ["network-unreachable", /No route to host|Network is unreachable/],
  ["timeout", /timed out/i],
  // sshd's MaxStartups drop (at the jump host or the node) closes the connection before its banner.
  ["bastion-throttled", /(kex|ssh)_exchange_identification:/],
  ["connection-lost", /^Connection (closed|reset) by \S+ port \d+/],
];

/** Only a drop before the banner (MaxStartups) or before authentication is worth another try. */
const RETRIED: ReadonlySet<SshFailureClass> = new Set(["bastion-throttled", "connection-lost"]);

const KIND: ReadonlyMap<SshFailureClass, NodeFailureKind> = new Map([
  ["auth", "auth"],
  ["host-key", "host-key"],
  ["timeout", "timeout"],
]);

// Lines ssh adds after the cause: the jump's `-W` giving up, and the banner of a changed key.
const FOLLOWER = /^(stdio forwarding failed|@+)$/;

/** ssh's stderr as lines worth reading: trimmed, the `@@@` frame of its warnings taken off. */
function sshLines(stderr: string): string[] {
  return stderr
    .split(/\r?\n/)
    .map((line) => line.trim().replace(/^@+\s*|\s*@+$/g, ""))
    .filter((line) => line !== "" && !FOLLOWER.test(line));
}

/** The first line of ssh's that names a class (else its first line), and that class. */
export function sshFailureWords(stderr: string): { sshClass: SshFailureClass; line: string } {
  const lines = sshLines(stderr);
  for (const line of lines)
    for (const [sshClass, words] of CLASS_WORDS) if (words.test(line)) return { sshClass, line };
  return { sshClass: "ssh", line: lines[0] ?? "ssh exited with status 255 and said nothing" };
}

/** Whether a failure of this class is worth another try. */
export const isRetriedClass = (sshClass: SshFailureClass | undefined) =>
  sshClass !== undefined && RETRIED.has(sshClass);

const SUDO_REFUSED =
  /sudo: (a password is required|a terminal is required|.*is not in the sudoers|.*may not run sudo|sorry, user .* is not allowed)/i;

/**
 * What a failed ssh run means for the node: exit status 255 is ssh's own failure, reported in
 * ssh's words with its class; sudo's refusals and any other exit are the probe's.
 */
export function classifySshFailure(
  node: LoadedNode,
  failure: ProcessFailure,
  timeoutMs: number,
): NodeAuditError {
  const { stderr } = failure;
  const host = node.host;
  if (failure.timedOut) {
    return new NodeAuditError(
      node.name,
      "timeout",
      `timed out after ${timeoutMs / 1000}s without a complete answer from ${host}: ssh was killed, node not audited`,
      { sshClass: "timeout" },
    );
  }
  if (failure.exitCode === 255) {
    const { sshClass, line } = sshFailureWords(stderr);
    return new NodeAuditError(node.name, KIND.get(sshClass) ?? "unreachable", line, { sshClass });
  }
  if (SUDO_REFUSED.test(stderr)) {
    return new NodeAuditError(
      node.name,
      "sudo",
      `sudo -n refused on ${host}, node not audited (become: sudo needs passwordless sudo for /bin/sh): ${lastLines(stderr, 1)}`,
    );
  }
  if (node.ssh.become === "sudo" && /sudo: (command )?not found/i.test(stderr)) {
    return new NodeAuditError(
      node.name,
      "sudo",
      `sudo is not installed on ${host} (become: sudo), node not audited`,
    );
  }
  return new NodeAuditError(
    node.name,
    "probe",
    `probe failed on ${host} (${howItEnded(failure)}), node not audited: ${lastLines(stderr) || "no error output"}`,
  );
}
