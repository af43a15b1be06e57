import { readFile } from "node:fs/promises";
import { InputFileError } from "../errors.js";
import { Report } from "./schema.js";

/**
 * A report written by `audit --format json`, validated: a wrong file is an error naming it, never
 * an empty fleet.
 */
export async function readReport(file: string): Promise<Report> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new InputFileError(file, `cannot read the report: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InputFileError(
      file,
      `not a JSON report (write it with --format json): ${(error as Error).message}`,
    );
  }
  const parsed = Report.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputFileError(
      file,
      `not a Quartermaster report (schemaVersion 1): ${issue.path.join(".")}: ${issue.message}`,
    );
  }
  return parsed.data;
}
