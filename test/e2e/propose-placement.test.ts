// Accept placement end to end, decided from what was audited and never waiting on a dark host: a
// group of 9 real sshd test hosts, one unreachable and one with a changed host key, audited through
// the real CLI, `propose` against the real git server and the GitHub double. Needs root.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { parse } from "yaml";
import { suiteForge } from "../support/forge.js";
import { startFleet, type HostDefinition, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_propose_placement";
const M = "fleet-manifests";
const NAMES = Array.from({ length: 9 }, (_, i) => `app-0${i + 1}`);
const DOWN = "app-08";
const REKEYED = "app-09";

const FILES: Record<string, string> = {
  [`${M}/fleet.yaml`]: "policy:\n  sysctl: { on_drift: accept }\n",
  [`${M}/groups/app.yaml`]: [
    "system:",
    "  sysctl_parameters:",
    "    net.ipv4.ip_forward: 0   # app nodes do not route",
    "    net.ipv4.tcp_fin_timeout: 60",
    "",
  ].join("\n"),
  ...Object.fromEntries(NAMES.map((n) => [`${M}/nodes/${n}.yaml`, "groups: [app]\n"])),
};

// Seven of the nine forward packets (one operator's change on every audited node); app-02 alone
// also shortened its FIN timeout. The two dark nodes run the declared values.
const hostOf = (name: string): HostDefinition => {
  const index = NAMES.indexOf(name);
  const sysctls: Record<string, string> = {
    "net.ipv4.ip_forward": index < 7 ? "1" : "0",
    "net.ipv4.tcp_fin_timeout": name === "app-02" ? "45" : "60",
  };
  return { name, sysctls, ...(name === DOWN && { state: "stopped" as const }) };
};

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-placement-",
  files: { "README.md": "Fleet manifests.\n", ...FILES },
  setup: async () => {
    fleet = await startFleet(NAMES.map(hostOf), { prefix: "qmd" });
    await fleet.rotateHostKey(REKEYED);
  },
});

after(async () => {
  await fleet?.stop();
});

// The audits read no history: each time the dark nodes miss their first run (a second in a row
// would set bit 8).
const run = scheduledRun(forge, () => fleet.sshConfig, { stateFromRepo: false });
const openPulls = () => forge.double.pulls().filter((p) => p.state === "open");
const sysctlsIn = (text: string) =>
  (parse(text) as { system?: { sysctl_parameters?: Record<string, unknown> } }).system
    ?.sysctl_parameters;

describe("accept placement with dark hosts", () => {
  it("one run: app-02's own drift is an override PR, and seven of nine drifting alike edit the group file while the two dark nodes keep their value in their own files", async () => {
    const { file, report } = await run.audit("run-1", 5); // drift (1), nodes not audited (4)
    const status = new Map(report.nodes.map((n) => [n.name, n.status]));
    assert.equal(status.get(DOWN), "unreachable");
    assert.notEqual(status.get(REKEYED), "drift");
    assert.notEqual(status.get(REKEYED), "clean");
    assert.equal(NAMES.filter((n) => status.get(n) === "drift").length, 7);

    await run.propose(["--report", file]);
    const pulls = openPulls();
    assert.equal(pulls.length, 2, pulls.map((p) => p.title).join("\n"));
    const override = pulls.find((p) => p.head.includes("--net-ipv4-tcp-fin-timeout--"))!;
    assert.match(override.title, /on app-02: net\.ipv4\.tcp_fin_timeout: 60 → 45/);
    assert.deepEqual(await forge.changedFiles(override.head), [`${M}/nodes/app-02.yaml`]);

    const shared = pulls.find((p) => p.head.includes("--net-ipv4-ip-forward--"))!;
    assert.deepEqual(await forge.changedFiles(shared.head), [
      `${M}/groups/app.yaml`,
      `${M}/nodes/${DOWN}.yaml`,
      `${M}/nodes/${REKEYED}.yaml`,
    ]);
    assert.ok(
      shared.body!.includes(
        "declares this value for 9 nodes and 7 of the 7 audited drifted alike: the shared file is edited, and the other 2 (2 not audited this run) keep the old value in their own files",
      ),
      shared.body!,
    );

    for (const pull of pulls) await forge.double.mergePull(pull.number);
    const dir = await forge.checkout();
    const read = (name: string) => readFile(path.join(dir, M, name), "utf8");
    // Only the value changed in the group file: its comment and the other key stay as they were.
    assert.equal(
      await read("groups/app.yaml"),
      FILES[`${M}/groups/app.yaml`]!.replace("ip_forward: 0 ", "ip_forward: 1 "),
    );
    // Kept as the group file writes it: a number.
    for (const dark of [DOWN, REKEYED])
      assert.deepEqual(sysctlsIn(await read(`nodes/${dark}.yaml`)), { "net.ipv4.ip_forward": 0 });
    assert.deepEqual(sysctlsIn(await read("nodes/app-02.yaml")), {
      "net.ipv4.tcp_fin_timeout": 45,
    });
  });

  it("after merging both, the next audit finds every audited node clean and propose has nothing to do", async () => {
    const { file, report } = await run.audit("run-2", 4);
    assert.deepEqual(
      report.nodes.filter((n) => n.status === "drift").map((n) => [n.name, n.drift]),
      [],
    );
    const result = await run.propose(["--report", file]);
    assert.equal(openPulls().length, 0);
    assert.doesNotMatch(result.stdout, /^open /m);
  });
});
