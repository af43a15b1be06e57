// Every shell block the README shows runs as written, in a scratch copy of the repository, except
// the blocks it marks `<!-- readme-test: skip (reason) -->` (they need SSH hosts, GitHub or a
// node).
import assert from "node:assert/strict";
import { chmod, cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { BUILT_ENTRY, ensureBuilt, REPO_ROOT } from "../support/cli.js";

interface Block {
  line: number;
  commands: string[];
  skip?: string;
}

function readmeBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split("\n");
  lines.forEach((line, i) => {
    if (line !== "```sh") return;
    const skip = /^<!-- readme-test: skip \((.+)\) -->$/.exec(lines[i - 1] ?? "")?.[1];
    const end = lines.indexOf("```", i + 1);
    const commands = lines.slice(i + 1, end).filter((l) => l.trim() && !l.trim().startsWith("#"));
    blocks.push({ line: i + 1, commands, ...(skip !== undefined && { skip }) });
  });
  return blocks;
}

describe("the README's commands", async () => {
  const blocks = readmeBlocks(await readFile(path.join(REPO_ROOT, "README.md"), "utf8"));
  let scratch: string;
  let env: Record<string, string>;

  before(async () => {
    await ensureBuilt();
    // A scratch clone: the built CLI and dependencies shared, the manifests a copy the commands may
    // change.
    scratch = await mkdtemp(path.join(tmpdir(), "qm-readme-"));
    for (const name of ["dist", "node_modules", "package.json", "schemas"])
      await symlink(path.join(REPO_ROOT, name), path.join(scratch, name));
    await cp(path.join(REPO_ROOT, "fleet-manifests"), path.join(scratch, "fleet-manifests"), {
      recursive: true,
    });
    // `npm link` puts these on the PATH; `npm ci` and `npm run build` already ran in this clone.
    const bin = path.join(scratch, ".bin");
    await mkdir(bin);
    for (const name of ["quartermaster", "qm"]) {
      await writeFile(
        path.join(bin, name),
        `#!/bin/sh\nexec node ${JSON.stringify(BUILT_ENTRY)} "$@"\n`,
      );
      await chmod(path.join(bin, name), 0o755);
    }
    await writeFile(
      path.join(bin, "npm"),
      `#!/bin/sh\n[ "$1" = ci ] || [ "$1" = link ] || [ "$1 $2" = "run build" ] || exit 64\n`,
    );
    await chmod(path.join(bin, "npm"), 0o755);
    env = { PATH: `${bin}:${process.env.PATH}`, NO_COLOR: "1" };
  });
  after(() => rm(scratch, { recursive: true, force: true }));

  it("has shell blocks to run, and says why it skips the others", () => {
    assert.ok(blocks.filter((b) => !b.skip).length >= 2, JSON.stringify(blocks));
  });

  for (const block of blocks) {
    it(`README.md:${block.line}: ${block.commands[0]}`, { skip: block.skip }, async () => {
      for (const command of block.commands) {
        const result = await execa("sh", ["-c", command], { cwd: scratch, env, reject: false });
        // 0 clean, 1 drift: a command that works; 2 and up, or a stack trace, is the README lying.
        assert.ok(
          result.exitCode === 0 || result.exitCode === 1,
          `${command}: exit ${result.exitCode}\n${result.stderr}`,
        );
        assert.doesNotMatch(result.stderr, /internal error|\n {4}at /, command);
        assert.ok(result.stdout.trim() || result.exitCode === 0, `${command} printed nothing`);
      }
    });
  }
});
