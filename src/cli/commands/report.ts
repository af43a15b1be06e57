import { UsageError } from "../../errors.js";
import { DEFAULT_MARKDOWN_MAX_BYTES } from "../../report/formats/markdown.js";
import { readReport } from "../../report/read.js";
import { OUTPUT_OPTIONS, parse, parseWholeNumber } from "../options.js";
import { checkOut, formatName, writeReport } from "../output.js";

// Renders a saved JSON report again in any format: a job summary, annotations, metrics.
export async function reportCommand(argv: string[]): Promise<number> {
  const { values } = parse("report", argv, {
    ...OUTPUT_OPTIONS,
    report: { type: "string" },
    "max-bytes": { type: "string" },
  });
  if (!values.report)
    throw new UsageError("report needs --report FILE (an audit report written with --format json)");
  if (values["max-bytes"] !== undefined && formatName(values.format) !== "markdown")
    throw new UsageError("--max-bytes applies to --format markdown only");
  const maxBytes = parseWholeNumber("max-bytes", values["max-bytes"], DEFAULT_MARKDOWN_MAX_BYTES);
  await checkOut(values.out);
  const report = await readReport(values.report);
  try {
    await writeReport(report, { ...values, maxBytes });
  } catch (error) {
    // The cap leaves no room even for the summary.
    if (error instanceof RangeError) throw new UsageError(`--max-bytes: ${error.message}`);
    throw error;
  }
  return 0;
}
