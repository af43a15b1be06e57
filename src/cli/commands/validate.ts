import path from "node:path";
import { io } from "../io.js";
import { ManifestError, ManifestErrors, formatLocation } from "../../errors.js";
import { capAnnotations, type Annotation } from "../../report/formats/github.js";
import { plural } from "../../report/formats/common.js";
import { waiverWarnings } from "../../drift/waivers.js";
import { visible } from "../../text/escape.js";
import { foreignTeams } from "../../manifest/owners.js";
import { sshConfigCommands } from "../../manifest/ssh-config.js";
import { parseFlags, switchFlag } from "../flags.js";
import { DEFAULT_MANIFESTS, findManifests, loadManifests } from "../../runs/fleet.js";
import { MANIFEST_FLAGS, manifestSource } from "../options.js";
import { writeWorkflowCommands } from "../stdout.js";

/** The annotation GitHub shows at the manifest line of a validation error. */
function githubAnnotation(error: ManifestError): Annotation {
  const { file, line, col } = error.location;
  return {
    level: "error",
    file,
    line,
    col,
    message: error.hint ? `${error.message} (${error.hint})` : error.message,
  };
}

const VALIDATE_FLAGS = {
  ...MANIFEST_FLAGS,
  "allow-exec": switchFlag(
    "accept ssh_config lines that run a program on the auditing machine (ProxyCommand, Match exec, ...)",
  ),
};

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

export async function validateCommand(argv: string[]): Promise<number> {
  const { config } = parseFlags("validate", argv, VALIDATE_FLAGS);
  try {
    const fleet = await loadManifests(manifestSource(config));
    const groups = new Set(fleet.nodes.flatMap((n) => n.groups));
    const where = config.repo
      ? (config.manifests ?? DEFAULT_MANIFESTS)
      : findManifests(config.manifests);
    // Under Actions the repository is known: its organization is the only one teams can be of.
    const org = io().env.GITHUB_REPOSITORY?.split("/")[0];
    const problems = [
      ...(config["allow-exec"] ? [] : sshConfigErrors(where, fleet.sshConfig)),
      ...(org ? foreignTeams(fleet.nodes, org) : []),
    ];
    if (problems.length) throw new ManifestErrors(problems);
    io().stdout.write(
      `${formatLocation({ file: where })}: valid (${plural(fleet.nodes.length, "node")}, ${plural(groups.size, "group")} in use)\n`,
    );
    // Valid, but a waiver that never ends (or ends later than policy allows) is worth a word.
    for (const warning of waiverWarnings(
      fleet.settings.ignore ?? [],
      fleet.settings.policy?.waivers?.max_days,
      new Date(),
    ))
      io().stderr.write(
        `quartermaster: warning: ${formatLocation({ file: `${where}/fleet.yaml` })}: ignore[${warning.index}]: ${visible(warning.message)}\n`,
      );
    // Valid, but an audit of it would check nothing: worth a word, not a failure (a new tree).
    if (!fleet.nodes.length)
      io().stderr.write(
        `quartermaster: warning: ${formatLocation({ file: where })}/nodes/ declares no node, so an audit checks nothing\n`,
      );
    return 0;
  } catch (error) {
    if (error instanceof ManifestErrors && io().env.GITHUB_ACTIONS === "true") {
      writeWorkflowCommands(capAnnotations(error.errors.map(githubAnnotation), "in the log below"));
    }
    throw error;
  }
}
