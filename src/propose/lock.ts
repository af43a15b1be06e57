import { ForgeError } from "../errors.js";
import type { Forge } from "../forge/forge.js";
import { STATE_BRANCH } from "./state.js";

// One propose run at a time per repository. Two runs planning from the same pull requests open the
// same branches (GitHub answers the second with 422s) and each spends a whole budget, and the
// second to keep its state would drop the first's audit history; one after the other, the second
// plans from what the first did and kept. The lock is a branch because creating one is
// atomic on GitHub; a run that died leaves it behind, and a lock older than STALE_MS is taken over.
export const LOCK_BRANCH = `${STATE_BRANCH}--lock`;
const STALE_MS = 15 * 60_000;
const WAIT_MS = 20 * 60_000;
const POLL_MS = 2_000;

/**
 * Waits until this run holds the lock (calling `onWait` once if another run holds it), and returns
 * the function that releases it. `base` is a commit the lock's own commit is made on.
 */
export async function lockProposals(
  github: Forge,
  base: string,
  onWait: () => void,
): Promise<() => Promise<void>> {
  // An empty commit: its date says when the lock was taken.
  const sha = await github.commitFiles(
    base,
    {},
    "Quartermaster: a propose run is writing pull requests",
  );
  const started = Date.now();
  let waited = false;
  // When this run first met each lock: a commit's date is whatever its pusher wrote.
  const met = new Map<string, number>();
  while (!(await github.createBranch(LOCK_BRANCH, sha))) {
    const held = await github.branchHead(LOCK_BRANCH);
    if (held !== undefined && (await stale(github, held, met))) {
      await github.deleteBranch(LOCK_BRANCH);
      continue;
    }
    if (Date.now() - started > WAIT_MS)
      throw new ForgeError(
        `another propose run has held branch ${LOCK_BRANCH} for ${WAIT_MS / 60_000} minutes (delete the branch if no run is going)`,
      );
    if (!waited) onWait();
    waited = true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return () => github.deleteBranch(LOCK_BRANCH);
}

/**
 * A lock no run holds any more: dated over STALE_MS ago, dated later than any clock skew explains
 * (no run took it then), or held for STALE_MS since this run met it, whatever its date says.
 */
async function stale(github: Forge, held: string, met: Map<string, number>): Promise<boolean> {
  const now = Date.now();
  if (!met.has(held)) met.set(held, now);
  const age = now - Date.parse((await github.commit(held)).date);
  return !(Math.abs(age) <= STALE_MS) || now - met.get(held)! > STALE_MS;
}
