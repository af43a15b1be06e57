import { io } from "../io.js";
import { ManifestError, ManifestErrors, formatLocation } from "../../errors.js";
import { capAnnotations, type Annotation } from "../../report/formats/github.js";
import { plural } from "../../report/formats/common.js";
import { visible } from "../../text/escape.js";
import { parseFlags, switchFlag } from "../flags.js";
import { runValidate } from "../../runs/validate.js";
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

/** `validate`'s argv and environment as its config: nothing read yet. */
function validateConfig(argv: string[]) {
  const { config } = parseFlags("validate", argv, VALIDATE_FLAGS);
  const env = io().env;
  return {
    options: {
      source: manifestSource(config),
      allowExec: config["allow-exec"],
      // Under Actions the repository is known: its organization is the only one teams can be of.
      org: env.GITHUB_REPOSITORY?.split("/")[0],
    },
    annotate: env.GITHUB_ACTIONS === "true",
  };
}

export async function validateCommand(argv: string[]): Promise<number> {
  const config = validateConfig(argv);
  try {
    const { fleet, where, waivers } = await runValidate(config.options);
    const groups = new Set(fleet.nodes.flatMap((n) => n.groups));
    io().stdout.write(
      `${formatLocation({ file: where })}: valid (${plural(fleet.nodes.length, "node")}, ${plural(groups.size, "group")} in use)\n`,
    );
    // Valid, but a waiver that never ends (or ends later than policy allows) is worth a word.
    for (const warning of waivers)
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
    if (error instanceof ManifestErrors && config.annotate) {
      writeWorkflowCommands(capAnnotations(error.errors.map(githubAnnotation), "in the log below"));
    }
    throw error;
  }
}
