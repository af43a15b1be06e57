// A host flooding what it is audited on, over real ssh: one user opening two thousand ports (no
// privilege needed) adds one item counting them past the first few, not two thousand; the node's
// report entry stays small and the report reads back. Needs root.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { MAX_UNAUTHORIZED_ITEMS, OTHER_LISTENERS } from "../../src/domains/ports/index.js";
import { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

const LISTENERS = 2000;

describe("a host flooding the audit", () => {
  let fleet: TestFleet;
  let work: string;

  before(async () => {
    fleet = await startFleet([
      {
        name: "flood-01",
        listeners: Array.from({ length: LISTENERS }, (_, i) => `tcp/${20000 + i}`),
      },
    ]);
    work = await writeTree({
      "fleet-manifests/nodes/flood-01.yaml": "networking:\n  listening_ports: [tcp/22]\n",
    });
  });
  after(async () => {
    await fleet?.stop();
    if (work) await removeTree(work);
  });

  test("with listeners: one item counts those past the first ones", async () => {
    const file = path.join(work, "report.json");
    const audit = await runCli([
      "audit",
      "--manifests",
      path.join(work, "fleet-manifests"),
      "--ssh-config",
      fleet.sshConfig,
      "--format",
      "json",
      "--out",
      file,
    ]);
    assert.equal(audit.exitCode, 1, audit.stderr);
    const text = await readFile(file, "utf8");
    const node = Report.parse(JSON.parse(text)).nodes[0]!;
    const ports = node.drift.filter((d) => d.domain === "ports");
    assert.equal(ports.length, MAX_UNAUTHORIZED_ITEMS);
    const other = ports.at(-1)!;
    assert.equal(other.key, OTHER_LISTENERS);
    const shown = MAX_UNAUTHORIZED_ITEMS - 1;
    assert.match(
      other.detail!,
      new RegExp(`^${LISTENERS - shown} more listeners outside the allow-list: tcp/\\d+, `),
    );
    assert.ok(text.length < 200_000, `${text.length} bytes`);
    const rendered = await runCli(["report", "--report", file, "--format", "markdown"]);
    assert.equal(rendered.exitCode, 0, rendered.stderr);
    assert.match(rendered.stdout, /other listeners/);
  });
});
