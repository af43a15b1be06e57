// The GitHub Actions runner's reading of a job's output, written apart from the code under test:
// it splits lines at CR and LF, acts on a line whose text after leading whitespace (Unicode spaces
// too; format characters, as a comparison ignoring them would) starts with `::`, and on the legacy
// `##[command]` form anywhere in a line.

/** The lines of `text` the runner would act on as workflow commands. */
export function runnerCommandLines(text: string): string[] {
  return text
    .split(/\r\n|\r|\n/)
    .filter((line) => line.replace(/^[\s\p{Cf}]+/u, "").startsWith("::") || line.includes("##["));
}
