// snapshot and adopt on real test hosts: a value the next boot's sysctl pass changes is declared
// live with a comment saying what it becomes and which file sets it; adopt's summary counts them,
// and the audit of the adopted tree reports exactly those latent items. Needs root.
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import type { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const HOSTS = ["reboot-01", "reboot-02"];
const PERSISTED = "/etc/sysctl.d/99-qm-latent.conf";
// Per network namespace: live values the seeded file (line 2, line 3) sets otherwise at boot.
const SEEDED = `# seeded\nnet.ipv4.ip_forward = 1\nnet.ipv4.conf.all.accept_redirects = 0\n`;
const LIVE = { "net.ipv4.ip_forward": "0", "net.ipv4.conf.all.accept_redirects": "1" };

describe("snapshot and adopt say what the next boot changes", () => {
  let fleet: TestFleet;
  let dir: string;
  let tree: string;
  let adopted: Awaited<ReturnType<typeof runCli>>;
  const cli = (args: string[]) => runCli([...args, "--ssh-config", fleet.sshConfig]);

  async function yamlFiles(): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const entry of await readdir(tree, { recursive: true, withFileTypes: true }))
      if (entry.isFile() && entry.name.endsWith(".yaml")) {
        const file = path.join(entry.parentPath, entry.name);
        out.set(path.relative(tree, file), await readFile(file, "utf8"));
      }
    return out;
  }

  before(async () => {
    fleet = await startFleet(
      HOSTS.map((name) => ({ name, sysctls: LIVE, files: { [PERSISTED]: { contents: SEEDED } } })),
    );
    dir = await mkdtemp(path.join(os.tmpdir(), "qm-latent-declare-"));
    tree = path.join(dir, "tree");
    const inventory = path.join(dir, "inventory.yml");
    await writeFile(
      inventory,
      [
        "all:",
        "  children:",
        "    web:",
        "      hosts:",
        ...HOSTS.map((h) => `        ${h}:`),
        "",
      ].join("\n"),
    );
    adopted = await cli([
      ...["adopt", "--inventory", inventory, "--manifests", tree],
      ...["--known-hosts", fleet.knownHosts],
    ]);
  });

  after(async () => {
    await fleet?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("adopt declares the live values, each with a comment naming its hosts, what it becomes and the file line", async () => {
    assert.equal(adopted.exitCode, 0, adopted.stderr);
    const seen = new Map<string, Set<string>>();
    for (const [rel, text] of await yamlFiles())
      for (const line of text.split("\n")) {
        const found =
          /^ *(net\.ipv4\.\S+): "(\d)" # (?:([\w, -]+): )?will become (\d) at reboot: (\S+)$/.exec(
            line,
          );
        if (!found) continue;
        const [, key, live, named, becomes, because] = found;
        assert.equal(live, LIVE[key as keyof typeof LIVE], line);
        assert.equal(becomes, live === "0" ? "1" : "0", line);
        assert.equal(
          because,
          `${PERSISTED}:${key === "net.ipv4.ip_forward" ? 2 : 3}`,
          `${rel}: ${line}`,
        );
        // A node's own file names no host; a shared layer names the hosts it comments for.
        const hosts = named ? named.split(", ") : [path.basename(rel, ".yaml")];
        for (const host of hosts) seen.set(key!, (seen.get(key!) ?? new Set()).add(host));
      }
    for (const key of Object.keys(LIVE))
      assert.deepEqual([...(seen.get(key) ?? [])].sort(), HOSTS, key);
  });

  test("the summary counts the commented values, and the audit of the tree reports exactly that many latent items", async () => {
    const counted = /, (\d+) values the next boot or restart changes, commented/.exec(
      adopted.stderr,
    );
    assert.ok(counted, adopted.stderr);
    const out = path.join(dir, "report.json");
    const audit = await cli(["audit", "--manifests", tree, "--format", "json", "--out", out]);
    assert.equal(audit.exitCode, 0, audit.stderr);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    const latent = report.nodes.flatMap((n) => n.drift.filter((d) => d.latent));
    // At least the seeded keys on each host; this machine's own sysctl.d may add more.
    assert.ok(latent.length >= HOSTS.length * 2, JSON.stringify(latent));
    assert.equal(Number(counted[1]), latent.length);
  });

  test("snapshot writes each such value with its comment, and the file reads back as the live values", async () => {
    const result = await cli([
      ...["snapshot", "--manifests", tree, "--node", HOSTS[0]!, "--category", "sysctl"],
    ]);
    assert.equal(result.exitCode, 0, result.stderr);
    const lines = result.stdout.split("\n");
    assert.ok(
      lines.includes(`    net.ipv4.ip_forward: "0" # will become 1 at reboot: ${PERSISTED}:2`),
      result.stdout,
    );
    assert.ok(
      lines.includes(
        `    net.ipv4.conf.all.accept_redirects: "1" # will become 0 at reboot: ${PERSISTED}:3`,
      ),
      result.stdout,
    );
    const spec = parse(result.stdout) as { system: { sysctl_parameters: Record<string, string> } };
    assert.deepEqual(
      Object.fromEntries(Object.keys(LIVE).map((k) => [k, spec.system.sysctl_parameters[k]])),
      LIVE,
    );
  });
});
