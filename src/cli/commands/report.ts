import { UsageError } from "../../errors.js";
import { renderFleetPage } from "../../report/fleet-page/page.js";
import { DEFAULT_MARKDOWN_MAX_BYTES } from "../../report/formats/markdown.js";
import { readReport } from "../../report/read.js";
import { parseFlags } from "../flags.js";
import { io } from "../io.js";
import { maxBytesFlag, REPORT_FLAG } from "../options.js";
import { writeOut, writeReport } from "../output.js";
import { checkOut, OUTPUT_FLAGS } from "../output-options.js";
import {
  repositoryUrl,
  RUN_HISTORY_FLAGS,
  runHistoryFrom,
  runHistorySource,
} from "../run-history.js";

const REPORT_FLAGS = {
  ...OUTPUT_FLAGS,
  ...RUN_HISTORY_FLAGS,
  report: {
    ...REPORT_FLAG,
    required: {
      message: "report needs --report FILE (an audit report written with --format json)",
    },
  },
  "max-bytes": maxBytesFlag(undefined),
};

/** `report`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function reportConfig(argv: string[]) {
  const { config } = parseFlags("report", argv, REPORT_FLAGS);
  const { report, "max-bytes": maxBytes } = config;
  if (maxBytes !== undefined && config.format !== "markdown")
    throw new UsageError("--max-bytes applies to --format markdown only");
  return {
    ...config,
    report,
    maxBytes: maxBytes ?? DEFAULT_MARKDOWN_MAX_BYTES,
    history: runHistorySource(config),
    repositoryUrl: repositoryUrl(),
  };
}

// Renders a saved JSON report again in any format: a job summary, annotations, metrics, the fleet page.
export async function reportCommand(argv: string[]): Promise<number> {
  const config = reportConfig(argv);
  await checkOut(config.out);
  const report = await readReport(config.report);
  if (config.format === "html") {
    const url = config.repositoryUrl;
    const page = renderFleetPage(report, await runHistoryFrom(config.history), {
      ...(url && { repositoryUrl: url }),
    });
    if (config.out) await writeOut(config.out, page);
    else io().stdout.write(page);
    return 0;
  }
  try {
    await writeReport(report, config);
  } catch (error) {
    // The cap leaves no room even for the summary.
    if (error instanceof RangeError) throw new UsageError(`--max-bytes: ${error.message}`);
    throw error;
  }
  return 0;
}
