// Every section of a probe runs as a shell function in the probe's one shell, not in a subshell of
// its own (src/probe/script.ts): its positional parameters are its own, the rest is kept apart by
// these rules, checked on each section the audit builds (every registered domain, maintenance and
// cause; declared and snapshot), alone, under every shell the probe must run in:
// - it reads no variable it has not set itself (`set -u`, with an empty environment);
// - it leaves the variables set before it (the framing's, the shell's), the options, the working
//   directory, umask, traps and open files as it found them;
// - its own variables are lowercase and its functions named qm_*, so neither can stand for an
//   environment variable or a command another section runs;
// - it ends: its end frame and the probe's follow (no `exit`, no fatal shell error).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { defaultAuditSettings, probeSections } from "../../../src/audit/node.js";
import { SINCE_VARIABLE } from "../../../src/audit/cause/probe.js";
import {
  buildProbe,
  newNonce,
  parseProbeOutput,
  probeContext,
  shellQuote,
  type ProbeSection,
} from "../../../src/probe/script.js";
import { allSamples } from "../../support/samples.js";

const SHELLS = [
  ["/usr/bin/dash", "-s"],
  ["/usr/bin/bash", "--posix", "-s"],
  ["/usr/bin/busybox", "sh", "-s"],
].filter(([file]) => existsSync(file!));

const scratch = mkdtempSync(path.join(tmpdir(), "qm-isolation-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

// The shell's state into a file: what `set` lists last, after a line of its own. Functions only
// where the shell can list them (bash).
const STATE = [
  "qm_state() {",
  "  {",
  '    echo "options $-"; echo "cwd $(pwd)"; echo "umask $(umask)"',
  "    echo traps; trap",
  // The shell's own fds: a section piped into the shared awk runs in a subshell, where `$$` is
  // still the parent's pid (whose pipe ends come and go as it starts the pipeline).
  "    echo fds; read -r qm_pid qm_stat < /proc/self/stat; ls /proc/$qm_pid/fd; unset qm_pid qm_stat",
  "    echo functions; command -v declare >/dev/null 2>&1 && declare -F",
  "    echo variables; set",
  '  } > "$1"',
  "}",
].join("\n");

/** `set`'s listing as name to value text; a quoted value may span lines. */
function variables(listing: string): Map<string, string> {
  const found = new Map<string, string>();
  let at = 0;
  while (at < listing.length) {
    const eq = listing.indexOf("=", at);
    if (eq === -1) break;
    let end = eq + 1;
    for (let quote = ""; end < listing.length; end++) {
      const c = listing[end]!;
      if (quote === "'") {
        if (c === "'") quote = "";
      } else if (quote === "$'" && c === "\\") end++;
      else if (quote === "$'" && c === "'") quote = "";
      else if (c === "\\") end++;
      else if (c === "'") quote = listing[end - 1] === "$" ? "$'" : "'";
      else if (c === "\n") break;
    }
    found.set(listing.slice(at, eq), listing.slice(eq + 1, end));
    at = end + 1;
  }
  return found;
}

function readState(file: string) {
  const text = readFileSync(file, "latin1");
  const functions = text.indexOf("\nfunctions\n");
  const listing = text.indexOf("variables\n", functions + 1);
  return {
    state: text.slice(0, functions),
    functions: new Set(
      text
        .slice(functions + 11, listing)
        .split("\n")
        .filter(Boolean),
    ),
    variables: variables(text.slice(listing + 10)),
  };
}

/** What `section` breaks of the rules above when run alone under `shell`; empty when none. */
async function breaches(shell: string[], section: ProbeSection, nonce: string): Promise<string[]> {
  const dir = mkdtempSync(path.join(scratch, `${section.name}-`));
  const at = (label: string) => shellQuote(path.join(dir, label));
  const probe = buildProbe(nonce, [section]).script;
  const call = "\nqm_section\n";
  assert.ok(probe.includes(call), "the probe calls each section's function on a line of its own");
  const script = [
    "set -u",
    `${SINCE_VARIABLE}=${Math.floor(Date.now() / 1000) - 86400}`,
    STATE,
    probe.replace(
      call,
      `\nqm_state ${at("before")}\nqm_state ${at("again")}${call}qm_state ${at("after")}\n`,
    ),
  ].join("\n");
  const [file, ...args] = shell as [string, ...string[]];
  const run = await execa(file, args, {
    input: script,
    encoding: "latin1",
    env: {},
    extendEnv: false,
    reject: false,
  });
  try {
    parseProbeOutput(run.stdout, nonce).get(section.name);
  } catch (error) {
    return [`did not end (${(error as Error).message}): ${run.stderr.trim().slice(-300)}`];
  }
  const state = (label: string) => readState(path.join(dir, label));
  const [before, again, later] = [state("before"), state("again"), state("after")];
  const found: string[] = [];
  if (later.state !== before.state)
    found.push(`changed the shell:\n${before.state}\n->\n${later.state}`);
  // The shell's own counters (bash's LINENO, `_`) change between two listings with nothing run.
  const own = (name: string) => again.variables.get(name) !== before.variables.get(name);
  for (const [name, value] of before.variables) {
    if (!own(name) && later.variables.get(name) !== value) found.push(`changed or unset ${name}`);
  }
  for (const [name, value] of later.variables) {
    if (before.variables.has(name) || own(name)) continue;
    if (!/^[a-z_][a-z0-9_]*$/.test(name)) found.push(`set ${name}=${value}, not a lowercase name`);
  }
  for (const fn of later.functions) {
    const name = fn.split(" ").at(-1)!;
    if (!before.functions.has(fn) && !name.startsWith("qm_"))
      found.push(`defined function ${name}, not named qm_*`);
  }
  return found;
}

const SAMPLES = await allSamples();

describe("each section keeps to itself, run alone under dash, bash --posix and busybox sh", () => {
  for (const mode of ["declared", "snapshot"] as const) {
    it(`every section of a ${mode} probe`, async () => {
      const nonce = newNonce();
      const sections = probeSections(
        SAMPLES.map(({ domain, sample }) => ({
          domain,
          declared: mode === "declared" ? sample.declared : undefined,
        })),
        defaultAuditSettings(),
        true,
        probeContext(nonce, 1 << 20),
      );
      assert.deepEqual(
        sections.map((s) => s.name),
        ["maintenance", ...SAMPLES.map((s) => s.domain.name), "cause"],
      );
      const found: string[] = [];
      for (const shell of SHELLS)
        for (const section of sections)
          for (const breach of await breaches(shell, section, nonce))
            found.push(`${shell.join(" ")}: ${section.name}: ${breach}`);
      assert.deepEqual(found, []);
    });
  }
});

it("the rules catch a section that breaks one", async () => {
  const nonce = newNonce();
  const cases: [string, RegExp][] = [
    ['printf "%s" "$X"', /did not end.*X/s],
    ['printf "%s" "$HOME"', /did not end.*HOME/s],
    ["exit 0", /did not end/],
    ["${qm_x:?}", /did not end/],
    ["IFS=:", /changed or unset IFS/],
    ["PATH=/bin", /changed or unset PATH/],
    ["QM_N=x", /did not end|changed or unset QM_N/],
    ["Found=1", /set Found=.1.?, not a lowercase name/],
    ["set -f", /changed the shell/],
    ["cd /", /changed the shell/],
    ["umask 077", /changed the shell/],
    ["trap : INT", /changed the shell/],
    ["exec 4</dev/null", /changed the shell/],
  ];
  for (const [script, expected] of cases) {
    const found = await breaches(SHELLS[0]!, { name: "a", script }, nonce);
    assert.match(found.join("\n"), expected, script);
  }
  const bash = SHELLS.find(([file]) => file!.endsWith("bash"))!;
  assert.match(
    (await breaches(bash, { name: "a", script: "stat() { :; }" }, nonce)).join("\n"),
    /defined function stat, not named qm_\*/,
  );
  assert.deepEqual(await breaches(SHELLS[0]!, { name: "a", script: "set -- x; r=1" }, nonce), []);
});
