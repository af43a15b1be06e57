// Where the JSON Schemas for a manifest tree are: in the repository's node_modules when it
// installs Quartermaster as a package, in this repository's own schemas/ when the tree is inside
// it, else nowhere (no `$schema` comment is written).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

const isQuartermaster = (dir: string) => {
  try {
    const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as {
      name?: unknown;
    };
    return pkg.name === "quartermaster";
  } catch {
    return false;
  }
};

/** The schemas folder for the tree at `treeDir` (absolute), looking up to its repository's root. */
export function schemasFor(treeDir: string): string | undefined {
  for (let dir = treeDir; ; dir = path.dirname(dir)) {
    const installed = path.join(dir, "node_modules", "quartermaster", "schemas");
    if (existsSync(installed)) return installed;
    if (isQuartermaster(dir) && existsSync(path.join(dir, "schemas")))
      return path.join(dir, "schemas");
    if (existsSync(path.join(dir, ".git")) || path.dirname(dir) === dir) return undefined;
  }
}

/** The first line of a file at `file` (absolute) declaring `kind`, or "" with no schemas. */
export function schemaComment(
  schemas: string | undefined,
  file: string,
  kind: "fleet" | "group" | "node-spec",
): string {
  if (!schemas) return "";
  const relative = path.relative(path.dirname(file), path.join(schemas, `${kind}.schema.json`));
  return `# yaml-language-server: $schema=${relative.split(path.sep).join("/")}\n`;
}
