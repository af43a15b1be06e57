// `adopt --units` end to end: three real systemd test hosts (systemd as PID 1 of each host's own
// namespaces), the real CLI. The app unit is the same on app-01 and app-02 and enabled there;
// app-03's has a drop-in of its own and is not enabled. The group file holds the common unit, the
// odd host's file its own, and the first audit of the adopted tree is clean; a unit changed on a
// host afterwards is drift. On plain-01, whose systemd is not running, a unit pattern is not
// expanded, and adopt says why. Needs root.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { parse } from "yaml";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const UNIT = "qm-app.service";
const APP = `[Unit]\nDescription=app\nDefaultDependencies=no\n\n[Service]\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n`;
const DROPIN = "[Service]\nEnvironment=MODE=canary\n";
const SIDE_UNIT = "qm-side.service";
const SIDE = `[Unit]\nDescription=side\nDefaultDependencies=no\n\n[Service]\nExecStart=/bin/sleep infinity\n`;
const shq = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
const ALIKE = ["app-01", "app-02"];
const ODD = "app-03";
const PLAIN = "plain-01";

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
      // The unit file is there, but no systemd runs: /run/systemd/system is hidden in case the
      // machine's own systemd made it.
      {
        name: PLAIN,
        writable: ["/run/systemd"],
        files: { [`/etc/systemd/system/${UNIT}`]: { contents: APP } },
      },
    ],
    { prefix: "qmu" },
  );
  await fleet.exec(PLAIN, "rm -rf /run/systemd/system");
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

test("adopt again with more units: factored like the first run into the layers wherever the tree keeps them, one line per host, what was there kept byte for byte", async () => {
  const inventory = path.join(dir, "hosts.ini");
  const tree = path.join(dir, "tree");
  // The odd host's node file kept elsewhere in the tree, as the loader allows.
  const oddFile = `nodes/canary/${ODD}.yml`;
  await mkdir(path.join(tree, "nodes/canary"));
  await rename(path.join(tree, `nodes/${ODD}.yaml`), path.join(tree, oddFile));
  // The first test enabled the unit on the odd host: back as the tree declares it.
  await fleet.exec(ODD, `systemctl disable --quiet ${UNIT}`);
  for (const name of [...ALIKE, ODD])
    await fleet.exec(
      name,
      `printf '%s' ${shq(name === ODD ? SIDE.replace("side", "side-canary") : SIDE)} > /etc/systemd/system/${SIDE_UNIT} && systemctl daemon-reload`,
    );
  const files = ["fleet.yaml", "groups/app.yaml", ...ALIKE.map((n) => `nodes/${n}.yaml`), oddFile];
  const before = new Map<string, string>();
  for (const rel of files) before.set(rel, await readFile(path.join(tree, rel), "utf8"));

  const extra = "systemd-journald.service";
  const again = await runCli([
    ...["adopt", "--inventory", inventory, "--manifests", tree],
    ...["--units", `${UNIT},${SIDE_UNIT},${extra}`],
    ...sshArgs(),
  ]);
  assert.equal(again.exitCode, 0, again.stderr);
  const after = new Map<string, string>();
  for (const rel of files) after.set(rel, await readFile(path.join(tree, rel), "utf8"));
  // Each file holds what it held, byte for byte, with at most one run of text added inside.
  for (const rel of files) {
    const [was, now] = [before.get(rel)!, after.get(rel)!];
    let head = 0;
    while (head < was.length && was[head] === now[head]) head++;
    assert.ok(now.endsWith(was.slice(head)), `${rel}:\n${now}`);
  }
  const unitsIn = (rel: string) =>
    ((parse(after.get(rel)!) ?? {}).systemd?.units ?? []) as { name: string; contents?: string }[];
  // The unit most members hold alike goes to the group, the odd host's to its own file.
  const side = (rel: string) => unitsIn(rel).filter((u) => u.name === SIDE_UNIT);
  assert.equal(side("groups/app.yaml")[0]?.contents, SIDE, after.get("groups/app.yaml"));
  assert.equal(side(oddFile)[0]?.contents, SIDE.replace("side", "side-canary"));
  for (const name of ALIKE)
    assert.equal(after.get(`nodes/${name}.yaml`), before.get(`nodes/${name}.yaml`));
  // The unit every node holds alike goes to fleet.yaml, declared nowhere else.
  const journald = files.filter((rel) => unitsIn(rel).some((u) => u.name === extra));
  assert.deepEqual(journald, ["fleet.yaml"]);
  // One line per host, none contradicting another.
  for (const name of [...ALIKE, ODD]) {
    const lines = again.stderr.split("\n").filter((l) => l.startsWith(`${name}: `));
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(
      lines[0]!,
      /: already declared \(.+\); the files and units it did not declare added, in /,
    );
  }
  assert.match(
    again.stderr,
    new RegExp(
      `^${ODD}: already declared \\(${oddFile}\\); .* in fleet\\.yaml, groups/app\\.yaml, ${oddFile}$`,
      "m",
    ),
  );
  assert.doesNotMatch(again.stderr, /left as it is/);
  const clean = await runCli(["audit", "--manifests", tree, ...sshArgs().slice(0, 2)]);
  assert.equal(clean.exitCode, 0, clean.stdout.slice(0, 3000) + clean.stderr);
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

test("adopt --units with a glob on a host whose systemd is not running: the cause is said, not 'no match'", async () => {
  const inventory = path.join(dir, "plain.ini");
  await writeFile(inventory, `[plain]\n${PLAIN}\n`);
  const adopted = await runCli([
    ...["adopt", "--inventory", inventory, "--manifests", path.join(dir, "plain")],
    ...["--units", "qm-a*.service"],
    ...sshArgs(),
  ]);
  assert.equal(adopted.exitCode, 0, adopted.stderr);
  assert.match(
    adopted.stderr,
    /^plain-01: --units qm-a\*\.service: not expanded: systemd is not running on this host \(no \/run\/systemd\/system\)$/m,
  );
  assert.doesNotMatch(adopted.stderr, /no match/);
});
