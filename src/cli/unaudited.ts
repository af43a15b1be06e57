import { io } from "./io.js";
import { unauditedLimit } from "../report/unaudited.js";
import { UsageError } from "../errors.js";
import type { ReadHistory } from "../report/history.js";
import type { UnauditedSource } from "../runs/unaudited.js";
import { visible } from "../text/escape.js";
import { switchFlag, checkedFlag, textFlag, type Config } from "./flags.js";
import { githubSettings } from "./options.js";

// The flags `audit` and `merge-reports` judge the unaudited budget by (runs/unaudited.ts judges).

export const UNAUDITED_FLAGS = {
  "max-unaudited": checkedFlag(
    "N|N%",
    "exit with bit 8 when more than N nodes (or N% of them) were not audited (default: fleet.yaml audit.max_unaudited, else no limit)",
    (given) => {
      if (!unauditedLimit(given))
        throw new UsageError(
          `--max-unaudited takes a number of nodes or a share such as 10%, not "${visible(given)}"`,
        );
      return given;
    },
  ),
  state: {
    ...textFlag(
      "FILE",
      "the audit history kept on the state branch (audit-history.json): since when nodes are unaudited and drift exists, and bit 8 for audit.max_unaudited_for",
    ),
    excludes: {
      "state-from-repo":
        "--state FILE and --state-from-repo are two sources of one history: give one",
    },
  },
  "state-from-repo": switchFlag(
    "read the audit history from the state branch of $GITHUB_REPOSITORY (needs GITHUB_TOKEN)",
  ),
};

type UnauditedConfig = Config<typeof UNAUDITED_FLAGS>;

/** The flags as their source, settled before anything is read: a missing token is said first. */
export function unauditedSource(values: UnauditedConfig): UnauditedSource {
  const maxUnaudited = values["max-unaudited"];
  if (values.state !== undefined) return { maxUnaudited, history: { file: values.state } };
  if (!values["state-from-repo"]) return { maxUnaudited };
  return { maxUnaudited, history: { github: githubSettings("--state-from-repo") } };
}

/** Says which entries of the history `file` were left out: each costs only itself. */
export function warnDropped(file: string, history: ReadHistory): ReadHistory {
  for (const why of history.dropped)
    io().stderr.write(`quartermaster: ${file}: ${visible(why)}; that entry is left out\n`);
  return history;
}
