// `npm run lint:workflows` on a copy of the shipped workflows and actions: it passes them as they
// are, and fails on a `uses:` planted with a tag, naming the file and line.
import assert from "node:assert/strict";
import { cp, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { before, describe, it } from "node:test";
import { execa } from "execa";
import { REPO_ROOT } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const lint = (dir: string) =>
  execa("npx", ["tsx", path.join(REPO_ROOT, "scripts", "lint-workflows.ts"), dir], {
    cwd: REPO_ROOT,
    reject: false,
    all: true,
  });

/** A copy of what the linter reads: the workflows and both composite actions. */
async function copy(): Promise<string> {
  const dir = await tree();
  for (const part of [".github/workflows", "action.yml", "ssh/action.yml"])
    await cp(path.join(REPO_ROOT, part), path.join(dir, part), { recursive: true });
  return dir;
}

/** Puts `ref` after the `@` of the first `uses: action@…` line of `file`; returns its line number. */
async function plant(file: string, action: string, ref: string): Promise<number> {
  const lines = (await readFile(file, "utf8")).split("\n");
  const index = lines.findIndex((l) => l.includes(`uses: ${action}@`));
  assert.ok(index >= 0, `${action} is not in ${file}`);
  lines[index] = lines[index]!.replace(/@.*$/, `@${ref}`);
  await writeFile(file, lines.join("\n"));
  return index + 1;
}

describe("lint:workflows requires every uses: pinned to a full commit SHA", () => {
  let shipped: Awaited<ReturnType<typeof lint>>;
  before(async () => {
    shipped = await lint(await copy());
  });

  it("passes the shipped workflows and actions", () => {
    assert.equal(shipped.exitCode, 0, shipped.all);
    assert.match(shipped.all, /6 workflows and 2 actions: 0 findings$/m);
  });

  it("fails on a tag planted in a workflow, and on one planted in action.yml", async () => {
    const dir = await copy();
    const workflowLine = await plant(
      path.join(dir, ".github/workflows/ci.yml"),
      "actions/checkout",
      "v7",
    );
    const actionLine = await plant(
      path.join(dir, "action.yml"),
      "actions/cache",
      "27d5ce7f107fe9357f9df03efb73ab90386fccae",
    );
    const result = await lint(dir);
    assert.equal(result.exitCode, 1, result.all);
    assert.match(
      result.all,
      new RegExp(
        `^\\.github/workflows/ci\\.yml:${workflowLine}: uses actions/checkout@v7: pin it to a full commit SHA`,
        "m",
      ),
    );
    // A SHA without the release it names is refused too: nothing says what to update it to.
    assert.match(
      result.all,
      new RegExp(
        `^action\\.yml:${actionLine}: uses actions/cache@27d5ce7f[0-9a-f]{32}: pin it`,
        "m",
      ),
    );
    assert.match(result.all, /: 2 findings$/m);
  });
});
