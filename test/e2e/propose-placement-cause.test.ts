// Accept placement when one cause's PR bundles a shared value with others, with dark hosts, end to
// end on real sshd test hosts (each drifted one has a sysctl.d file that set its live values: a
// `persisted` cause). A web group of three, one dark, the two audited drifted alike on the group's
// key and on a key of their own files: the group file takes the shared value, the dark node keeps
// the old one in its own file. An app group of nine, two dark, seven drifted alike through two
// different files (two causes, two PRs' worth): the group file once, both dark nodes keeping the
// old value. Needs root.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { parse } from "yaml";
import { suiteForge } from "../support/forge.js";
import { startFleet, type HostDefinition, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_propose_placement_cause";
const M = "fleet-manifests";
const WEB = ["web-01", "web-02", "web-03"];
const WEB_DARK = "web-03";
const APP = Array.from({ length: 9 }, (_, i) => `app-0${i + 1}`);
const APP_DARK = ["app-08", "app-09"];
// The seven audited app nodes: four tuned by one file, three by another.
const FILE_A = "/etc/sysctl.d/90-backlog.conf";
const FILE_B = "/etc/sysctl.d/91-backlog.conf";

const FILES: Record<string, string> = {
  [`${M}/fleet.yaml`]: "policy:\n  sysctl: { on_drift: accept }\n",
  [`${M}/groups/web.yaml`]:
    "system:\n  sysctl_parameters:\n    net.core.somaxconn: 4096   # listen backlog\n",
  [`${M}/groups/app.yaml`]: "system:\n  sysctl_parameters:\n    net.core.somaxconn: 4096\n",
  ...Object.fromEntries(
    WEB.map((n) => [
      `${M}/nodes/${n}.yaml`,
      "groups: [web]\nsystem:\n  sysctl_parameters:\n    net.ipv4.tcp_fin_timeout: 60\n",
    ]),
  ),
  ...Object.fromEntries(APP.map((n) => [`${M}/nodes/${n}.yaml`, "groups: [app]\n"])),
};

const tuned = (file: string, values: Record<string, string>): Partial<HostDefinition> => ({
  sysctls: values,
  files: {
    [file]: {
      contents: Object.entries(values)
        .map(([k, v]) => `${k} = ${v}\n`)
        .join(""),
    },
  },
});

const hosts: HostDefinition[] = [
  ...WEB.map((name) =>
    name === WEB_DARK
      ? { name, state: "stopped" as const }
      : {
          name,
          ...tuned("/etc/sysctl.d/99-tune.conf", {
            "net.core.somaxconn": "2048",
            "net.ipv4.tcp_fin_timeout": "30",
          }),
        },
  ),
  ...APP.map((name, i) =>
    APP_DARK.includes(name)
      ? { name, state: "stopped" as const }
      : { name, ...tuned(i < 4 ? FILE_A : FILE_B, { "net.core.somaxconn": "2048" }) },
  ),
];

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-placement-cause-",
  files: { "README.md": "Fleet manifests.\n", ...FILES },
  setup: async () => {
    fleet = await startFleet(hosts, { prefix: "qmc" });
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig, { stateFromRepo: false });

const somaxconn = async (head: string, file: string): Promise<unknown> =>
  (
    parse(await forge.fileAt(head, `${M}/${file}`)) as {
      system?: { sysctl_parameters?: Record<string, unknown> };
    }
  ).system?.sysctl_parameters?.["net.core.somaxconn"];

describe("accept placement whatever else shares the PR", () => {
  it("the audited takers decide: the group file takes what they all (or most of many) drifted to, every dark taker keeps the old value in its own file", async () => {
    const { file, report } = await run.audit("run-1", 5); // drift (1), nodes not audited (4)
    const causes = report.nodes.flatMap((n) => n.drift.map((d) => d.cause?.kind));
    assert.deepEqual([...new Set(causes)], ["persisted"]);

    await run.propose(["--report", file]);
    const pulls = forge.double.pulls().filter((p) => p.state === "open");
    assertNoSelfChange(pulls);
    assert.equal(pulls.length, 2, pulls.map((p) => p.title).join("\n"));

    const web = pulls.find((p) => p.title.includes("web-01"))!;
    assert.match(
      web.title,
      /^Accept drift from one persisted file on web-01, web-02: sysctl net\.ipv4\.tcp_fin_timeout and 1 more$/,
    );
    assert.deepEqual(await forge.changedFiles(web.head), [
      `${M}/groups/web.yaml`,
      `${M}/nodes/web-01.yaml`,
      `${M}/nodes/web-02.yaml`,
      `${M}/nodes/${WEB_DARK}.yaml`,
    ]);
    assert.equal(await somaxconn(web.head, "groups/web.yaml"), 2048);
    // The value as the group file declared it (a sysctl value is text).
    assert.equal(String(await somaxconn(web.head, `nodes/${WEB_DARK}.yaml`)), "4096");
    assert.equal(await somaxconn(web.head, "nodes/web-01.yaml"), undefined);

    // Two files, two causes: their edits of one group line are one PR.
    const app = pulls.find((p) => p.title.includes("app-01"))!;
    assert.deepEqual(await forge.changedFiles(app.head), [
      `${M}/groups/app.yaml`,
      ...APP_DARK.map((n) => `${M}/nodes/${n}.yaml`),
    ]);
    assert.equal(await somaxconn(app.head, "groups/app.yaml"), 2048);
    for (const dark of APP_DARK)
      assert.equal(String(await somaxconn(app.head, `nodes/${dark}.yaml`)), "4096");
    assert.match(
      app.body!,
      /`fleet-manifests\/groups\/app\.yaml` declares this value for 9 nodes and 7 of the 7 audited drifted alike/,
    );
  });
});
