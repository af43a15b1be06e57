import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import ts from "typescript";
import { DOMAIN_NAMES } from "../../../src/domains/registry.js";
import { REPO_ROOT } from "../../support/cli.js";

// Nothing outside src/domains/ names a domain: what the audit, reports, pull requests and watch
// know of one comes through the contract and the registry, so a new domain is one folder and one
// registry line. A name as a value (`case "packages":`, `declared("files")`) is what this finds; a
// type's member (`Pick<Options, "packages">`, an option the user passes) names no domain.

/** The registered domain names `source` holds as string values, with their lines. */
function domainNamesIn(file: string, source: string): string[] {
  const names = new Set<string>(DOMAIN_NAMES);
  const parsed = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isLiteralTypeNode(node)) return;
    if (
      (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) &&
      names.has(node.text) &&
      !ts.isImportDeclaration(node.parent) &&
      !ts.isExportDeclaration(node.parent)
    ) {
      const line = parsed.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      found.push(`${file}:${line}: "${node.text}"`);
    }
    ts.forEachChild(node, visit);
  };
  visit(parsed);
  return found;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

test("no module of src/ outside src/domains/ names a domain", () => {
  const src = path.join(REPO_ROOT, "src");
  const outside = sources(src).filter((file) => !file.startsWith(path.join(src, "domains") + "/"));
  assert.ok(outside.length > 100, `${outside.length} modules`);
  const named = outside.flatMap((file) =>
    domainNamesIn(path.relative(REPO_ROOT, file), readFileSync(file, "utf8")),
  );
  assert.deepEqual(named, []);
});

test("a domain named as a value is found; a type's member of the same name is not", () => {
  const planted = [
    'type Options = Pick<{ packages: string; files: string }, "packages" | "files">;',
    "export function causeOf(item: { domain: string }) {",
    "  switch (item.domain) {",
    '    case "packages":',
    "      return 1;",
    "  }",
    "  return `systemd`;",
    "}",
  ].join("\n");
  assert.deepEqual(domainNamesIn("src/audit/cause/attach.ts", planted), [
    'src/audit/cause/attach.ts:4: "packages"',
    'src/audit/cause/attach.ts:7: "systemd"',
  ]);
});
