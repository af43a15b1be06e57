// Said once per run: the jump hosts whose nodes' connections had to be tried again. The ssh
// transport retries only a connection dropped or reset before ssh's handshake (an sshd at its
// MaxStartups drops them so), so a node's extra tries are such drops; the setting that avoids
// them is `ssh.max_sessions` on the nodes behind that jump host.
import type { LoadedNode } from "../manifest/load.js";
import { DEFAULT_MAX_SESSIONS } from "../transport/ssh.js";

/**
 * One line per jump host whose nodes needed retries: which one, how many, what to change.
 * `jumpHostOf` names a node's first jump host, wherever it is set (manifest or ssh_config).
 */
export async function throttlingNotices(
  nodes: readonly LoadedNode[],
  tries: ReadonlyMap<string, number>,
  jumpHostOf: (node: LoadedNode) => Promise<string | undefined>,
): Promise<string[]> {
  const byJump = new Map<string, { nodes: number; retries: number; limit: number }>();
  for (const node of nodes) {
    const extra = (tries.get(node.name) ?? 1) - 1;
    if (extra <= 0) continue;
    const jump = await jumpHostOf(node);
    if (jump === undefined) continue;
    const seen = byJump.get(jump) ?? { nodes: 0, retries: 0, limit: Number.POSITIVE_INFINITY };
    byJump.set(jump, {
      nodes: seen.nodes + 1,
      retries: seen.retries + extra,
      limit: Math.min(seen.limit, node.ssh.max_sessions ?? DEFAULT_MAX_SESSIONS),
    });
  }
  return [...byJump].map(
    ([jump, { nodes: count, retries, limit }]) =>
      `jump host ${jump}: ${retries} retr${retries === 1 ? "y" : "ies"} on ${count} node${count === 1 ? "" : "s"} whose connections through it were dropped or reset before ssh's handshake (as an sshd past its MaxStartups drops them): set ssh.max_sessions on the nodes behind it (now ${limit}) below that sshd's MaxStartups start value, or raise MaxStartups there`,
  );
}
