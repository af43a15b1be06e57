// npm runs only the install scripts package.json allows: a fresh `npm ci` of this repository runs
// none (esbuild's postinstall, which only checks and relinks its binary, is declined, and the build
// runs without it), so npm has nothing to warn about and nothing changes when it stops running
// unlisted scripts.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { execa } from "execa";
import { REPO_ROOT } from "../support/cli.js";

test("every installed package's install script is declared in allowScripts", async () => {
  const pkg = JSON.parse(await readFile(path.join(REPO_ROOT, "package.json"), "utf8")) as {
    allowScripts?: Record<string, boolean>;
  };
  assert.deepEqual(pkg.allowScripts, { esbuild: false });
  const listed = await execa("npm", ["install-scripts", "ls"], { cwd: REPO_ROOT, reject: false });
  assert.equal(listed.exitCode, 0, listed.stderr);
  assert.equal(listed.stdout.trim(), "No packages with unreviewed install scripts.");
});
