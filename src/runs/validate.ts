// A validate run: the manifest tree loaded as an audit loads it, and what merging it would let in
// that loading alone accepts (ssh_config lines running a program here, teams of another org).
import path from "node:path";
import { ManifestError, ManifestErrors } from "../errors.js";
import { waiverWarnings } from "../drift/waivers.js";
import type { Fleet } from "../manifest/load.js";
import { foreignTeams } from "../manifest/owners.js";
import { sshConfigCommands } from "../manifest/ssh-config.js";
import { DEFAULT_MANIFESTS, findManifests, loadManifests, type ManifestSource } from "./fleet.js";

export interface ValidateOptions {
  source: ManifestSource;
  /** Accept ssh_config lines that run a program on the auditing machine. */
  allowExec: boolean;
  /** The organization the repository is of, when known: teams of any other are refused. */
  org: string | undefined;
}

/** The tree's ssh_config lines that run a program where the audit runs, as manifest errors. */
function sshConfigErrors(where: string, text: string | undefined): ManifestError[] {
  return sshConfigCommands(text ?? "").map(
    ({ line, col, why }) =>
      new ManifestError(
        why,
        { file: path.join(where, "ssh_config"), line, col },
        "a change here runs on the runner once merged; validate --allow-exec accepts it",
      ),
  );
}

/**
 * The valid tree, where it is (as a person names it) and its waivers' warnings; ManifestErrors
 * when it is not valid.
 */
export async function runValidate(
  options: ValidateOptions,
): Promise<{ fleet: Fleet; where: string; waivers: ReturnType<typeof waiverWarnings> }> {
  const { source } = options;
  const fleet = await loadManifests(source);
  const where = source.repo
    ? (source.manifests ?? DEFAULT_MANIFESTS)
    : findManifests(source.manifests);
  const problems = [
    ...(options.allowExec ? [] : sshConfigErrors(where, fleet.sshConfig)),
    ...(options.org ? foreignTeams(fleet.nodes, options.org) : []),
  ];
  if (problems.length) throw new ManifestErrors(problems);
  const { ignore = [], policy } = fleet.settings;
  return { fleet, where, waivers: waiverWarnings(ignore, policy?.waivers?.max_days, new Date()) };
}
