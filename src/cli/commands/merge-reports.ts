import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { UsageError } from "../../errors.js";
import { mergeReports, ReportMergeError, type ShardReport } from "../../report/merge.js";
import { Report } from "../../report/schema.js";
import { ExitBit } from "../exit.js";
import { OUTPUT_OPTIONS } from "../options.js";
import { writeReport } from "../output.js";
import { auditExitCode } from "./audit.js";

async function readShard(file: string): Promise<ShardReport> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new ReportMergeError(`${file}: cannot read: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ReportMergeError(`${file}: not JSON (write shard reports with --format json): ${(error as Error).message}`);
  }
  const parsed = Report.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ReportMergeError(`${file}: not a Quartermaster report: ${issue.path.join(".") || "(top level)"}: ${issue.message}`);
  }
  return { file, report: parsed.data };
}

/**
 * `merge-reports [--format F] [--out FILE] SHARD.json...`: one report from the shard reports of
 * `audit --shard k/n`, exiting like the audit of the whole fleet would.
 */
export async function mergeReportsCommand(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...OUTPUT_OPTIONS, help: { type: "boolean", default: false } }, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError(`merge-reports: ${(error as Error).message}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length === 0) throw new UsageError("merge-reports needs the shard report files: merge-reports --out report.json shard-*.json");
  try {
    const merged = mergeReports(await Promise.all(positionals.map(readShard)));
    // Reports are for machines; `--format text` still shows one to a person.
    await writeReport(merged, { ...values, format: values.format ?? "json" });
    return auditExitCode(merged);
  } catch (error) {
    if (!(error instanceof ReportMergeError)) throw error;
    process.stderr.write(`quartermaster merge-reports: ${error.message}; nothing merged\n`);
    return ExitBit.usage;
  }
}
