import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import ts from "typescript";
import { REPO_ROOT } from "../../support/cli.js";

// docs/adding-a-domain.md's contract table is what the next contributor reads instead of
// src/domains/domain.ts: it lists every member of the `Domain` interface, and nothing else.

/** The member names of `interface Domain` in `source`. */
function interfaceMembers(source: string): string[] {
  const parsed = ts.createSourceFile("domain.ts", source, ts.ScriptTarget.Latest, true);
  const domain = parsed.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === "Domain",
  );
  assert.ok(domain, "src/domains/domain.ts declares no interface Domain");
  return domain.members.map((m) => (m.name && ts.isIdentifier(m.name) ? m.name.text : "?"));
}

/** The members the doc's contract table names in its first column (`probe(declared, ctx)`: probe). */
function tableMembers(doc: string): string[] {
  const table = doc.split("## The contract")[1]!.split("\n## ")[0]!;
  return [...table.matchAll(/^\| (.+?) \|/gm)].flatMap(([, cell]) =>
    [...cell!.matchAll(/`(\w+)(?:\([^`]*\))?`/g)].map((m) => m[1]!),
  );
}

const differences = (members: string[], listed: string[]) => ({
  missingFromTable: members.filter((m) => !listed.includes(m)),
  notInInterface: listed.filter((m) => !members.includes(m)),
});

const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), "utf8");

test("the contract table of docs/adding-a-domain.md lists every member of Domain, and no other", () => {
  const members = interfaceMembers(read("src/domains/domain.ts"));
  assert.ok(members.length >= 20, members.join(", "));
  assert.deepEqual(differences(members, tableMembers(read("docs/adding-a-domain.md"))), {
    missingFromTable: [],
    notInInterface: [],
  });
});

test("a member left out of the table, or a table row for no member, is told", () => {
  const source = "export interface Domain<D> { name: string; probe(d: D): string; newOne?: true }";
  const doc = [
    "## The contract",
    "| member | what |",
    "| --- | --- |",
    "| `name` | the name |",
    "| `probe(declared, ctx)` | the shell |",
    "| `gone` | a member since removed |",
    "## Probe rules",
  ].join("\n");
  assert.deepEqual(differences(interfaceMembers(source), tableMembers(doc)), {
    missingFromTable: ["newOne"],
    notInInterface: ["gone"],
  });
});
