// What end-to-end suites that audit test hosts share: the hosts and their manifest tree for the
// suite's tests, and an audit whose JSON report is read back by the report's own schema.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before } from "node:test";
import { parse, stringify } from "yaml";
import { Report } from "../../src/report/schema.js";
import { runCli, type CliResult } from "./cli.js";
import { startFleet, type HostDefinition, type TestFleet } from "./hosts.js";
import { removeTree, scratchTrees, writeCommittedTree, writeTree } from "./tree.js";

/** A suite's test hosts and the tree that declares them, set once its `before` hook has run. */
export interface SuiteFleet {
  fleet: TestFleet;
  /** The scratch folder holding `fleet-manifests/`. */
  work: string;
  manifests: string;
}

/**
 * Starts the hosts and writes `files` (paths under the scratch folder, `fleet-manifests/…`) before
 * the suite's tests, as a git commit when `committed` (for `propose`); stops and removes both after.
 * Call it inside a `describe`.
 */
export function suiteFleet(
  hosts: HostDefinition[],
  files: Record<string, string>,
  options: { committed?: boolean } = {},
): SuiteFleet {
  const suite = {} as SuiteFleet;
  before(async () => {
    suite.fleet = await startFleet(hosts);
    suite.work = await (options.committed ? writeCommittedTree : writeTree)(files);
    suite.manifests = path.join(suite.work, "fleet-manifests");
  });
  after(async () => {
    await suite.fleet?.stop();
    if (suite.work) await removeTree(suite.work);
  });
  return suite;
}

/**
 * `audit --format json --out OUT` of the tree (OUT: `report.json` inside it unless given), run by
 * `cli` (the built CLI by default), and the report it wrote.
 */
export async function auditReport(
  manifests: string,
  sshConfig: string,
  options: {
    extra?: readonly string[];
    out?: string;
    cli?: (args: string[]) => Promise<CliResult>;
  } = {},
): Promise<CliResult & { report: Report; out: string }> {
  const out = options.out ?? path.join(manifests, "report.json");
  const run = await (options.cli ?? runCli)([
    ...["audit", "--manifests", manifests, "--ssh-config", sshConfig],
    ...["--format", "json", "--out", out, ...(options.extra ?? [])],
  ]);
  const report = Report.parse(JSON.parse(await readFile(out, "utf8")));
  return { ...run, report, out };
}

/**
 * Scratch trees for nodes behind a jump host: a manifest tree (nodes/ or a fleet.yaml) gets
 * `ssh.connect_timeout: 60` in its fleet.yaml, since through the jump host ssh's wait for the
 * node's banner includes the hop's whole login, which a busy machine stretched past the default
 * 10 s. No test asserts on a duration.
 */
export function jumpTrees(): (files?: Record<string, string>) => Promise<string> {
  const scratch = scratchTrees();
  return (files = {}) => {
    if (!Object.keys(files).some((name) => /^(nodes\/|fleet\.yaml$)/.test(name)))
      return scratch(files);
    const fleetSpec = (parse(files["fleet.yaml"] ?? "{}") ?? {}) as { ssh?: object };
    const ssh = { ...fleetSpec.ssh, connect_timeout: 60 };
    return scratch({ ...files, "fleet.yaml": stringify({ ...fleetSpec, ssh }) });
  };
}
