// Every domain sample's hostile section, with every time the host gives far ahead of the audit (a
// wrong clock; a file's owner sets its mtime anywhere on tmpfs) and a cause section of such times:
// the audit's report is one its own reader takes, `report` renders it and `propose` plans from it.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { stringify } from "yaml";
import { auditFleet } from "../../src/audit/fleet.js";
import { defaultAuditSettings } from "../../src/audit/node.js";
import { loadFleet } from "../../src/manifest/load.js";
import { runCli } from "../support/cli.js";
import {
  framed,
  marked,
  NOT_IN_MAINTENANCE,
  scriptedTransport as scripted,
} from "../support/probe-output.js";
import { allSamples, specOf } from "../support/samples.js";
import { removeTree, writeCommittedTree } from "../support/tree.js";

const SAMPLES = await allSamples();
// Year 33658, and a 15-digit time no date holds.
const TIMES = ["999999999999", "999999999999999"];

/** The hostile sections, every `btime` and stat time replaced by `far`, then a cause section of it. */
const hostileOutput = (far: string, declaredFiles: string[]) => (nonce: string) =>
  framed(nonce, [
    ["maintenance", NOT_IN_MAINTENANCE(nonce)],
    ...SAMPLES.map(({ domain, sample }): [string, string] => [
      domain.name,
      sample.hostile
        .section(nonce)
        .replace(/^btime \d+$/gm, `btime ${far}`)
        .replace(/^\d{9,10}( \/)/gm, `${far}$1`) +
        (domain.name === "sysctl"
          ? marked(nonce, [
              ["boot", `btime ${far}\n`],
              ["changed", `${far} /etc/sysctl.d/__proto__.conf\n`],
            ])
          : ""),
    ]),
    [
      "cause",
      marked(nonce, [
        ["clock", "2026-12-02 09:11:29 +0000\n"],
        ["stat", declaredFiles.map((f) => `${far} root ${f}\n`).join("")],
        ["dpkg-log", "9999-12-31 23:59:59 upgrade toString:amd64 1.0 2.0\n"],
        ["apt-history", ""],
        ["boot", `${far}\n`],
      ]),
    ],
  ]);

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

describe("host times that are not times, in every domain's hostile sample", () => {
  for (const far of TIMES)
    it(`(${far}) make a report that report and propose read`, async () => {
      const spec = specOf(SAMPLES.map(({ domain, sample }) => [domain, sample.hostile.declared]));
      // A kernel other than the one running: a reboot's cause, dated by the boot time.
      (spec.system as Record<string, unknown>).kernel_version = "0.0.0-declared";
      const work = await writeCommittedTree({
        "fleet-manifests/nodes/hostile.yaml": stringify(spec),
      });
      dirs.push(work);
      const manifests = path.join(work, "fleet-manifests");
      const fleet = await loadFleet(manifests);
      const files = ((spec.files ?? []) as { path: string }[]).map((f) => f.path);
      const report = await auditFleet({
        nodes: fleet.nodes,
        transportFor: () => ({ ...scripted(hostileOutput(far, files)) }),
        settings: defaultAuditSettings({ maxFileBytes: 1024 }),
        drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
        concurrency: 1,
        manifestRevision: null,
      });
      const node = report.nodes[0]!;
      assert.equal(node.status, "drift", node.error);
      for (const domain of ["kernel", "packages"]) {
        const cause = node.drift.find((d) => d.domain === domain)?.cause;
        assert.equal(cause?.kind, "unknown", domain);
        assert.match(
          cause.evidence,
          /is (later than the audit by more than a day|not a time):/,
          domain,
        );
      }
      const file = path.join(work, "report.json");
      await writeFile(file, JSON.stringify(report));
      const rendered = await runCli(["report", "--report", file, "--format", "markdown"]);
      assert.equal(rendered.exitCode, 0, rendered.stderr);
      const plan = await runCli([
        "propose",
        "--dry-run",
        "--report",
        file,
        "--manifests",
        manifests,
      ]);
      assert.equal(plan.exitCode, 0, plan.stderr);
      assert.match(plan.stdout, /would open/);
    });
});
