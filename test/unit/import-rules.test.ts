import assert from "node:assert/strict";
import path from "node:path";
import { describe, it } from "node:test";
import { stripVTControlCharacters } from "node:util";
import { cruise as depcruise } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";
import { REPO_ROOT } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

// `npm run lint` runs dependency-cruiser with .dependency-cruiser.js over this repository; here the
// same rules run over small trees of their own, to show they fail where they must. Its API, as its
// CLI calls it, in this process: one start for all the trees (a CLI start per tree cost ~2 s of CPU).

const tree = scratchTrees();
const options = extractDepcruiseOptions(path.join(REPO_ROOT, ".dependency-cruiser.js"));

/** The `err` report the CLI would print (its colours stripped) and its exit code. */
async function cruise(files: Record<string, string>, dirs = ["src"]) {
  const baseDir = await tree(files);
  const result = await depcruise(dirs, { ...(await options), baseDir, outputType: "err" });
  return { exitCode: result.exitCode, out: stripVTControlCharacters(String(result.output)) };
}

describe("the import rules", () => {
  it("refuse a cycle closed by a type-only import", async () => {
    const { exitCode, out } = await cruise({
      "src/report/formats/index.ts":
        'import { renderText } from "./text.js";\n' +
        "export type Renderer = (verbose: boolean) => string;\n" +
        "export const FORMATS = { text: renderText };\n",
      "src/report/formats/text.ts":
        'import type { Renderer } from "./index.js";\n' +
        'export const renderText: Renderer = () => "";\n',
    });
    assert.notEqual(exitCode, 0, out);
    assert.match(
      out,
      /error no-cycle: src\/report\/formats\/index\.ts →\s+src\/report\/formats\/text\.ts →\s+src\/report\/formats\/index\.ts/,
    );
  });

  it("refuse an import up the layers or sideways, and one of or by a module in no layer", async () => {
    const { exitCode, out } = await cruise({
      "src/manifest/load.ts":
        'import type { AuditOptions } from "../audit/fleet.js";\n' +
        "export const load = (options: AuditOptions) => options;\n",
      "src/audit/fleet.ts":
        'import { plan } from "../propose/plan.js";\n' +
        "export type AuditOptions = { plan: typeof plan };\n",
      "src/propose/plan.ts": 'import { stray } from "../stray.js";\nexport const plan = stray;\n',
      "src/stray.ts": 'import { text } from "./text/words.js";\nexport const stray = text;\n',
      "src/text/words.ts": "export const text = 1;\n",
    });
    assert.notEqual(exitCode, 0, out);
    assert.match(out, /error layer:manifest\/: src\/manifest\/load\.ts → src\/audit\/fleet\.ts/);
    assert.match(out, /error layer:audit\/: src\/audit\/fleet\.ts → src\/propose\/plan\.ts/);
    // A module in no layer, imported and importing.
    assert.match(out, /error in-a-layer: src\/propose\/plan\.ts → src\/stray\.ts/);
    assert.match(out, /error in-a-layer: src\/stray\.ts → src\/text\/words\.ts/);
  });

  it("refuse test code in what ships, a domain's sample included", async () => {
    const { exitCode, out } = await cruise({
      "src/domains/kernel/index.ts":
        'import { hostile } from "../../../test/support/probe-output.js";\nexport const kernel = hostile;\n',
      "src/domains/kernel/sample.ts":
        'import { hostile } from "../../../test/support/probe-output.js";\nexport const sample = hostile;\n',
      "test/support/probe-output.ts": "export const hostile = 1;\n",
    });
    assert.notEqual(exitCode, 0, out);
    assert.match(
      out,
      /error no-test-code: src\/domains\/kernel\/index\.ts → test\/support\/probe-output\.ts/,
    );
    assert.match(
      out,
      /error no-test-code: src\/domains\/kernel\/sample\.ts → test\/support\/probe-output\.ts/,
    );
  });

  it("refuse a domain's folder imported by anything but the registry", async () => {
    const domain = (name: string) =>
      `import { Shared } from "../shared.js";\nexport const ${name} = Shared;\n`;
    const { exitCode, out } = await cruise({
      "src/domains/shared.ts": "export const Shared = 1;\n",
      "src/domains/ports/index.ts": domain("ports"),
      "src/domains/ports/parse.ts": "export const parsePorts = 1;\n",
      "src/domains/kernel/index.ts": `import { ports } from "../ports/index.js";\n${domain("kernel")}`,
      "src/domains/registry.ts":
        'import { kernel } from "./kernel/index.js";\nimport { ports } from "./ports/index.js";\nexport const DOMAINS = [kernel, ports];\n',
      "src/domains/helper.ts": 'export { parsePorts } from "./ports/parse.js";\n',
      "src/watch/monitor.ts":
        'import { DOMAINS } from "../domains/registry.js";\nimport { ports } from "../domains/ports/index.js";\nexport const m = [DOMAINS, ports];\n',
    });
    assert.notEqual(exitCode, 0, out);
    const refused = [...out.matchAll(/error domains-through-the-registry: (\S+) → (\S+)/g)].map(
      (m) => `${m[1]} → ${m[2]}`,
    );
    assert.deepEqual(refused.sort(), [
      "src/domains/helper.ts → src/domains/ports/parse.ts",
      "src/domains/kernel/index.ts → src/domains/ports/index.ts",
      "src/watch/monitor.ts → src/domains/ports/index.ts",
    ]);
  });

  it("refuse a pure propose module reading the forge or a file, but let it name a record's type", async () => {
    const { exitCode, out } = await cruise({
      "src/propose/run-plan.ts":
        'import { readFile } from "node:fs/promises";\n' +
        'import { GitHub } from "../forge/github.js";\n' +
        "export const plan = [readFile, GitHub];\n",
      "src/propose/plan.ts":
        'import type { PullRecord } from "../forge/records.js";\n' +
        "export const plan = (pull: PullRecord) => pull;\n",
      "src/forge/github.ts": "export class GitHub {}\n",
      "src/forge/records.ts": "export type PullRecord = { number: number };\n",
    });
    assert.notEqual(exitCode, 0, out);
    assert.match(out, /error pure-core-no-io: src\/propose\/run-plan\.ts → src\/forge\/github\.ts/);
    assert.match(out, /error pure-core-no-io: src\/propose\/run-plan\.ts → (node:)?fs\/promises/);
    assert.doesNotMatch(out, /src\/propose\/plan\.ts →/);
  });

  it("refuse propose naming the GitHub client, even as a type, but let it name the Forge seam", async () => {
    const { exitCode, out } = await cruise({
      "src/propose/lock.ts":
        'import type { GitHub } from "../forge/github.js";\nexport const lock = (github: GitHub) => github;\n',
      "src/propose/state.ts":
        'import type { Forge } from "../forge/forge.js";\nexport const state = (forge: Forge) => forge;\n',
      "src/forge/github.ts": "export class GitHub {}\n",
      "src/forge/forge.ts": "export interface Forge { readonly host: string }\n",
    });
    assert.notEqual(exitCode, 0, out);
    assert.match(
      out,
      /error propose-uses-the-forge-seam: src\/propose\/lock\.ts → src\/forge\/github\.ts/,
    );
    assert.doesNotMatch(out, /src\/propose\/state\.ts →/);
  });

  it("refuse a benchmark importing a command, fleet-scale too", async () => {
    const { exitCode, out } = await cruise(
      {
        "bench/fleet-scale.ts":
          'import { auditCommand } from "../src/cli/commands/audit.js";\nexport const run = auditCommand;\n',
        "src/cli/commands/audit.ts": "export const auditCommand = () => 0;\n",
      },
      ["src", "bench"],
    );
    assert.notEqual(exitCode, 0, out);
    assert.match(
      out,
      /error bench-uses-runs: bench\/fleet-scale\.ts → src\/cli\/commands\/audit\.ts/,
    );
  });

  it("let imports run down the layers", async () => {
    const { exitCode, out } = await cruise({
      "src/cli/main.ts": 'import { plan } from "../propose/plan.js";\nexport const main = plan;\n',
      "src/propose/plan.ts":
        'import { toItems } from "../drift/drift.js";\nexport const plan = toItems;\n',
      "src/drift/drift.ts":
        'import type { Waiver } from "../manifest/schema.js";\n' +
        "export const toItems = (waivers: Waiver[]) => waivers;\n",
      "src/manifest/schema.ts":
        'import { QmError } from "../errors.js";\nexport type Waiver = QmError;\n',
      "src/errors.ts": "export class QmError extends Error {}\n",
    });
    assert.equal(exitCode, 0, out);
  });
});
