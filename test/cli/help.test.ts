// Help, version and suggestions as a newcomer meets them: every command explains its own flags.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { COMMAND_HELP } from "../../src/cli/help.js";
import { REPO_ROOT, runCli } from "../support/cli.js";

const VERSION = (
  JSON.parse(readFileSync(`${REPO_ROOT}/package.json`, "utf8")) as { version: string }
).version;

/** The option rows of a help text: [flag label, description]. */
function optionRows(help: string): [string, string][] {
  const block = help.split("\nOptions:\n")[1]!.split("\n\n")[0]!;
  return block.split("\n").map((line) => {
    const m = /^ {2}(\S.*?\S)( {2,}(.*))?$/.exec(line);
    assert.ok(m, `not an option row: ${JSON.stringify(line)}`);
    return [m[1]!, m[3] ?? ""];
  });
}

describe("help and version", () => {
  for (const command of Object.keys(COMMAND_HELP)) {
    it(`${command} --help lists each of its flags with what it does, and an example; exit 0`, async () => {
      const result = await runCli([command, "--help"]);
      assert.equal(result.exitCode, 0, result.stderr);
      assert.match(result.stdout, new RegExp(`^usage: quartermaster ${command}\\b`));
      const rows = optionRows(result.stdout);
      assert.ok(rows.length >= 2, result.stdout);
      for (const [label, text] of rows)
        assert.notEqual(text, "", `${command}: ${label} has no description`);
      assert.match(result.stdout, /\nExamples:\n {2}quartermaster /);
      assert.match(result.stdout, /\n\nExit codes: 0 [^\n]+$/);
    });
  }

  it("each command's help gives its own exit codes, not the audit's", async () => {
    const last = async (command: string) =>
      (await runCli([command, "--help"])).stdout.trim().split("\n").at(-1);
    assert.equal(await last("validate"), "Exit codes: 0 valid, 2 usage or manifest error.");
    assert.match(
      (await last("propose"))!,
      /^Exit codes: 0 every action carried out .* 4 some actions failed/,
    );
    assert.match((await last("audit"))!, /^Exit codes: 0 clean, 1 drift, .* with --strict/);
  });

  it("-h and help <command> print the same help as --help", async () => {
    const [long, short, viaHelp] = await Promise.all([
      runCli(["audit", "--help"]),
      runCli(["audit", "-h"]),
      runCli(["help", "audit"]),
    ]);
    assert.equal(short.stdout, long.stdout);
    assert.equal(viaHelp.stdout, long.stdout);
    assert.match(long.stdout, /--concurrency N +nodes audited at once \(default: 32\)/);
    assert.match(
      long.stdout,
      /--manifests DIR +the manifest tree \(default: the one this directory is in/,
    );
  });

  it("--version and -V print the package version", async () => {
    for (const flag of ["--version", "-V"]) {
      const result = await runCli([flag]);
      assert.equal(result.exitCode, 0);
      assert.equal(result.stdout, `quartermaster ${VERSION}`);
    }
  });

  it("a mistyped flag or command gets the nearest one suggested and the command's own usage", async () => {
    const flag = await runCli(["audit", "--lcoal"]);
    assert.equal(flag.exitCode, 2);
    assert.equal(flag.stdout, "");
    assert.equal(
      flag.stderr,
      'quartermaster: audit: unknown option --lcoal (did you mean --local?)\n\nusage: quartermaster audit [--local | --nodes LIST] [options]\nRun "quartermaster audit --help" for its options.',
    );
    const command = await runCli(["valdiate"]);
    assert.equal(command.exitCode, 2);
    assert.match(
      command.stderr,
      /^quartermaster: unknown command "valdiate" \(did you mean "validate"\?\)\n/,
    );
    const value = await runCli(["audit", "--nodes"]);
    assert.equal(value.exitCode, 2);
    assert.match(
      value.stderr,
      /^quartermaster: audit: Option '--nodes <value>' argument missing\n\nusage: quartermaster audit /,
    );
  });
});
