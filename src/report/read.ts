import { readFile } from "node:fs/promises";
import { ManifestError, ManifestErrors } from "../errors.js";
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
    throw new ManifestErrors([
      new ManifestError(`cannot read the report: ${(error as Error).message}`, { file }),
    ]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ManifestErrors([
      new ManifestError(
        `not a JSON report (write it with --format json): ${(error as Error).message}`,
        { file },
      ),
    ]);
  }
  const parsed = Report.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ManifestErrors([
      new ManifestError(
        `not a Quartermaster report (schemaVersion 1): ${issue.path.join(".")}: ${issue.message}`,
        { file },
      ),
    ]);
  }
  return parsed.data;
}
