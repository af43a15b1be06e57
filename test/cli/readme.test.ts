// Every shell block README.md and docs/*.md show runs as written, in a scratch copy of the
// repository, except the blocks marked `<!-- readme-test: skip (reason) -->` (they need SSH hosts,
// GitHub or a node); every relative link and #anchor they hold resolves.
import assert from "node:assert/strict";
import {
  chmod,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { parse } from "yaml";
import { BUILT_ENTRY, ensureBuilt, REPO_ROOT } from "../support/cli.js";
import { DOCUMENTED_SHA256, fleetWorkflowsIn } from "../workflows/fleet-repo.js";

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

/** README.md and every page under docs/, by their path in the repository. */
async function documentation(): Promise<Map<string, string>> {
  const pages = (await readdir(path.join(REPO_ROOT, "docs")))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`);
  const texts = new Map<string, string>();
  for (const page of ["README.md", ...pages])
    texts.set(page, await readFile(path.join(REPO_ROOT, page), "utf8"));
  return texts;
}

describe("the documentation's commands", async () => {
  const docs = await documentation();
  const blocks = [...docs].flatMap(([page, text]) =>
    readmeBlocks(text).map((block) => ({ ...block, page })),
  );
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
    assert.ok(
      blocks.filter((b) => !b.skip && b.page === "README.md").length >= 2,
      JSON.stringify(blocks),
    );
  });

  for (const block of blocks) {
    it(`${block.page}:${block.line}: ${block.commands[0]}`, { skip: block.skip }, async () => {
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

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, "")
    .replace(/ /g, "-");
}

/** A page's text with fenced blocks and code spans blanked, so their brackets are not links. */
function prose(markdown: string): string {
  return markdown.replace(/^( *)```[\s\S]*?^\1```$/gm, "").replace(/`[^`\n]*`/g, "``");
}

describe("the documentation's links", async () => {
  const docs = await documentation();
  const anchors = new Map(
    [...docs].map(([page, text]) => [
      page,
      new Set([...prose(text).matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]!))),
    ]),
  );
  for (const [page, text] of docs) {
    it(`${page}: every relative link and #anchor resolves`, async () => {
      const broken: string[] = [];
      for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [file, anchor] = target!.split("#") as [string, string | undefined];
        const resolved = file
          ? path.posix.normalize(path.posix.join(path.posix.dirname(page), file))
          : page;
        const exists = await readFile(path.join(REPO_ROOT, resolved)).then(
          () => true,
          (err: NodeJS.ErrnoException) => err.code === "EISDIR",
        );
        if (!exists) broken.push(`${target}: no ${resolved}`);
        else if (anchor !== undefined && !anchors.get(resolved)?.has(anchor))
          broken.push(`${target}: no heading #${anchor} in ${resolved}`);
      }
      assert.deepEqual(broken, []);
    });
  }

  it("README's fleet workflows are the ones docs/actions.md shows", async () => {
    const shown = fleetWorkflowsIn(docs.get("README.md")!);
    const documented = fleetWorkflowsIn(docs.get("docs/actions.md")!);
    assert.ok(Object.keys(shown).length > 0);
    assert.deepEqual(Object.keys(documented).sort(), [
      ".github/workflows/drift-audit.yml",
      ".github/workflows/manifest-review.yml",
      ".github/workflows/refresh-prs.yml",
      ".github/workflows/review-command.yml",
    ]);
    for (const [file, text] of Object.entries(shown)) assert.equal(text, documented[file], file);
  });

  it("the documented fleet workflows call this repository's workflows pinned by full commit SHA, the tag as a comment", () => {
    const calls = Object.values(fleetWorkflowsIn(docs.get("docs/actions.md")!)).flatMap((text) =>
      [...text.matchAll(/^ *uses: OWNER\/quartermaster\/(.*)$/gm)].map((m) => m[1]!),
    );
    assert.equal(calls.length, 4);
    for (const call of calls)
      assert.match(call, /^\.github\/workflows\/[\w-]+\.yml@[0-9a-f]{40} # v\d+\.\d+\.\d+$/);
  });

  it("the documented fleet workflows pin the release tarball's digest", () => {
    for (const [file, text] of Object.entries(fleetWorkflowsIn(docs.get("docs/actions.md")!)))
      assert.match(text, new RegExp(`^ +quartermaster-sha256: ${DOCUMENTED_SHA256}$`, "m"), file);
  });

  it("every input a documented caller passes is one the called workflow takes; the callers that reach hosts agree on where the ssh_config lives", async () => {
    const sshConfigs = new Map<string, unknown>();
    for (const [file, text] of Object.entries(fleetWorkflowsIn(docs.get("docs/actions.md")!))) {
      const caller = parse(text) as { jobs: Record<string, { uses?: string; with?: object }> };
      for (const [job, { uses, with: given }] of Object.entries(caller.jobs)) {
        const called = /^OWNER\/quartermaster\/(\.github\/workflows\/[\w-]+\.yml)@/.exec(
          uses ?? "",
        )?.[1];
        assert.ok(called, `${file} job ${job} calls ${uses}`);
        const workflow = parse(await readFile(path.join(REPO_ROOT, called), "utf8")) as {
          on: { workflow_call: { inputs: Record<string, unknown> } };
        };
        const inputs = Object.keys(workflow.on.workflow_call.inputs);
        for (const input of Object.keys(given ?? {}))
          assert.ok(
            inputs.includes(input),
            `${file} passes ${input}, which ${called} does not take`,
          );
        if (inputs.includes("ssh-config-file"))
          sshConfigs.set(called, (given as Record<string, unknown>)["ssh-config-file"]);
      }
    }
    assert.deepEqual(
      [...sshConfigs],
      [
        [".github/workflows/drift-audit.yml", "fleet-manifests/ssh_config"],
        [".github/workflows/review-command.yml", "fleet-manifests/ssh_config"],
      ],
    );
  });
});
