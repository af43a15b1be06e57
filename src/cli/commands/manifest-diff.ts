import { io } from "../io.js";
import { UsageError } from "../../errors.js";
import { renderManifestDiff } from "../../manifest/diff-markdown.js";
import { parseFlags } from "../flags.js";
import { runManifestDiff } from "../../runs/manifest-diff.js";
import { BASE_FLAG, MANIFEST_FLAGS, maxBytesFlag } from "../options.js";

// A job summary holds 1 MiB; leave room for anything else a workflow writes there.
const DEFAULT_MAX_BYTES = 1_000_000;

const MIN_BYTES = 1024;

const MANIFEST_DIFF_FLAGS = {
  manifests: MANIFEST_FLAGS.manifests,
  base: {
    ...BASE_FLAG,
    required: {
      message:
        "manifest-diff needs --base REF (the commit the pull request merges into, e.g. HEAD^1 of its merge commit)",
    },
  },
  "max-bytes": maxBytesFlag(DEFAULT_MAX_BYTES),
};

/** `manifest-diff`'s argv as its config: every flag read and checked, nothing read yet. */
function manifestDiffConfig(argv: string[]) {
  const { config } = parseFlags("manifest-diff", argv, MANIFEST_DIFF_FLAGS);
  const { base, "max-bytes": maxBytes } = config;
  // The heading and the closing note are always written; the cap leaves out whole sections.
  if (maxBytes < MIN_BYTES)
    throw new UsageError(`--max-bytes takes at least ${MIN_BYTES}, not ${maxBytes}`);
  return { manifests: config.manifests, base, maxBytes };
}

export async function manifestDiffCommand(argv: string[]): Promise<number> {
  const { maxBytes, ...options } = manifestDiffConfig(argv);
  io().stdout.write(renderManifestDiff(await runManifestDiff(options), maxBytes));
  return 0;
}
