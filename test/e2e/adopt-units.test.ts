// `adopt --units` end to end: three real systemd test hosts (systemd as PID 1 of each host's own
// namespaces), the real CLI. The app unit is the same on app-01 and app-02 and enabled there;
// app-03's has a drop-in of its own and is not enabled. The group file holds the common unit, the
// odd host's file its own, and the first audit of the adopted tree is clean; a unit changed on a
// host afterwards is drift. Needs root.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { parse } from "yaml";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const UNIT = "qm-app.service";
const APP = `[Unit]\nDescription=app\nDefaultDependencies=no\n\n[Service]\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n`;
const DROPIN = "[Service]\nEnvironment=MODE=canary\n";
const ALIKE = ["app-01", "app-02"];
const ODD = "app-03";

let fleet: TestFleet;
let dir: string;

before(async () => {
  fleet = await startFleet(
    [
      ...ALIKE.map((name) => ({
        name,
        systemd: true,
        files: { [`/etc/systemd/system/${UNIT}`]: { contents: APP } },
      })),
      {
        name: ODD,
        systemd: true,
        files: {
          [`/etc/systemd/system/${UNIT}`]: { contents: APP },
          [`/etc/systemd/system/${UNIT}.d/canary.conf`]: { contents: DROPIN },
        },
      },
    ],
    { prefix: "qmu" },
  );
  for (const name of ALIKE)
    await fleet.exec(name, `systemctl daemon-reload && systemctl enable --quiet ${UNIT}`);
  await fleet.exec(ODD, "systemctl daemon-reload");
  dir = await mkdtemp(path.join(os.tmpdir(), "qm-adopt-units-"));
});
after(async () => {
  await fleet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const sshArgs = () => ["--ssh-config", fleet.sshConfig, "--known-hosts", fleet.knownHosts];

test("adopt --units with a glob: the common unit in the group's file, the odd host's in its own; the first audit is clean, a changed unit is drift", async () => {
  const inventory = path.join(dir, "hosts.ini");
  await writeFile(inventory, `[app]\n${[...ALIKE, ODD].join("\n")}\n`);
  const tree = path.join(dir, "tree");
  // Each host's systemd expands the patterns from the unit files it knows.
  const adopted = await runCli([
    ...["adopt", "--inventory", inventory, "--manifests", tree],
    ...["--units", "qm-a*.service,qm-none-*.service"],
    ...sshArgs(),
  ]);
  assert.equal(adopted.exitCode, 0, adopted.stderr);
  for (const name of [...ALIKE, ODD])
    assert.match(
      adopted.stderr,
      new RegExp(`^${name}: --units qm-none-\\*\\.service: no match$`, "m"),
    );
  const read = async (rel: string) =>
    (parse(await readFile(path.join(tree, rel), "utf8")) ?? {}) as Record<string, any>;
  const unitsOf = (spec: Record<string, any>) =>
    (spec.systemd?.units ?? []) as { name: string; enabled?: boolean; dropins?: object }[];
  const group = unitsOf(await read("groups/app.yaml"));
  assert.deepEqual(
    group.map((u) => [u.name, u.enabled]),
    [[UNIT, true]],
    JSON.stringify(group),
  );
  assert.equal((group[0] as { contents?: string }).contents, APP);
  const odd = unitsOf(await read(`nodes/${ODD}.yaml`));
  assert.equal(odd.length, 1, JSON.stringify(odd));
  assert.equal(odd[0]!.enabled, false);
  assert.deepEqual(odd[0]!.dropins, { "canary.conf": DROPIN });
  for (const name of ALIKE) assert.deepEqual(unitsOf(await read(`nodes/${name}.yaml`)), [], name);

  const audit = (extra: string[] = []) =>
    runCli(["audit", "--manifests", tree, ...sshArgs().slice(0, 2), ...extra]);
  const clean = await audit();
  assert.equal(clean.exitCode, 0, clean.stdout.slice(0, 3000) + clean.stderr);

  await fleet.exec(ODD, `systemctl enable --quiet ${UNIT}`);
  const drifted = await audit(["--nodes", ODD, "--format", "json"]);
  assert.equal(drifted.exitCode, 1, drifted.stderr);
  // Latent items (a sysctl the next boot changes, adopted as it runs) are no drift.
  const items = (
    JSON.parse(drifted.stdout) as {
      nodes: { drift: { domain: string; key: string; latent?: object }[] }[];
    }
  ).nodes[0]!.drift.filter((d) => d.latent === undefined);
  assert.deepEqual(
    items.map((d) => [d.domain, d.key]),
    [["systemd", `${UNIT}:enabled`]],
    JSON.stringify(items),
  );
});

test("adopt again with one more unit: each declared node's file takes it at its end, the group's file is unchanged", async () => {
  const inventory = path.join(dir, "hosts.ini");
  const tree = path.join(dir, "tree");
  const group = await readFile(path.join(tree, "groups/app.yaml"), "utf8");
  const extra = "systemd-journald.service";
  const again = await runCli([
    ...["adopt", "--inventory", inventory, "--manifests", tree, "--units", `${UNIT},${extra}`],
    ...sshArgs(),
  ]);
  assert.equal(again.exitCode, 0, again.stderr);
  assert.equal(await readFile(path.join(tree, "groups/app.yaml"), "utf8"), group);
  for (const name of [...ALIKE, ODD]) {
    const spec = parse(await readFile(path.join(tree, `nodes/${name}.yaml`), "utf8")) as {
      systemd?: { units?: { name: string }[] };
    };
    assert.equal(spec.systemd?.units?.at(-1)?.name, extra, name);
    assert.equal(spec.systemd?.units?.filter((u) => u.name === UNIT).length, name === ODD ? 1 : 0);
  }
});

test("adopt --units with a glob matching more than 200 unit files: the first 200 declared, and the host says so", async () => {
  await fleet.exec(
    ODD,
    `for i in $(seq 1 201); do printf '[Service]\\nExecStart=/bin/true\\n' > /etc/systemd/system/qm-many-$i.service; done`,
  );
  const inventory = path.join(dir, "odd.ini");
  await writeFile(inventory, `${ODD}\n`);
  const tree = path.join(dir, "many-tree");
  const adopted = await runCli([
    ...["adopt", "--inventory", inventory, "--manifests", tree, "--packages", "none"],
    ...["--units", "qm-many-*.service"],
    ...sshArgs(),
  ]);
  assert.equal(adopted.exitCode, 0, adopted.stderr);
  assert.match(
    adopted.stderr,
    new RegExp(
      `^${ODD}: --units qm-many-\\*\\.service: more than 200 matches; the first 200 declared`,
      "m",
    ),
  );
  const spec = parse(await readFile(path.join(tree, `nodes/${ODD}.yaml`), "utf8")) as {
    systemd?: { units?: { name: string }[] };
  };
  const names = (spec.systemd?.units ?? []).map((u) => u.name);
  assert.equal(names.length, 200);
  assert.ok(
    names.every((n) => /^qm-many-\d+\.service$/.test(n)),
    names.join(" "),
  );
});
