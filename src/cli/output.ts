import { writeFile } from "node:fs/promises";
import { UsageError } from "../errors.js";
import { FORMATS, isFormatName } from "../report/formats/index.js";
import type { Report } from "../report/schema.js";
import { useColor } from "./options.js";

export function formatName(value: string | undefined): keyof typeof FORMATS {
  const name = value ?? "text";
  if (!isFormatName(name)) throw new UsageError(`unknown --format "${name}"; formats: ${Object.keys(FORMATS).join(", ")}`);
  return name;
}

/** Renders the report to --out (atomically enough: one write) or stdout. */
export async function writeReport(report: Report, values: { format?: string; out?: string; verbose?: boolean; color?: boolean; "no-color"?: boolean; maxBytes?: number }): Promise<void> {
  const render = FORMATS[formatName(values.format)];
  const color = !values.out && useColor(values, process.stdout);
  const text = render(report, { color, verbose: values.verbose ?? false, ...(values.maxBytes !== undefined && { maxBytes: values.maxBytes }) });
  if (values.out) await writeFile(values.out, text);
  else process.stdout.write(text);
}
