import v8 from "node:v8";

// Commands that read or plan a whole fleet: the audit, merging shard reports, propose.
const FLEET_COMMANDS = new Set(["audit", "merge-reports", "propose"]);

/**
 * A fleet audit keeps little alive (the manifests; entries wait in the spool) but makes much
 * short-lived garbage per node, and V8 lets the heap grow to about four times what survived its
 * last full collection before collecting again: at 10,000 nodes that slack was most of the peak.
 * Growing by half instead keeps the peak near the live data, for a few more full collections.
 * Set for `command` before its code is compiled: a code cache records V8's flags, and one made
 * after they changed is refused by a run compiled before.
 */
export function boundHeapGrowth(command: string | undefined): void {
  if (command !== undefined && FLEET_COMMANDS.has(command))
    v8.setFlagsFromString("--heap-growing-percent=50");
}
