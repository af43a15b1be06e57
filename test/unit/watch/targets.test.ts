import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LoadedNode } from "../../../src/manifest/load.js";
import { polledDomains, watchedDirectories } from "../../../src/watch/targets.js";

const node = (spec: Record<string, unknown>): LoadedNode => ({
  name: "web-01",
  host: "web-01",
  file: "nodes/web-01.yaml",
  layers: [],
  groups: [],
  spec,
  ssh: {},
});

describe("what the watcher watches", () => {
  it("watches the parent directory of each declared file, naming the file, and the marker's directory", () => {
    const dirs = watchedDirectories(
      node({
        files: [
          { path: "/etc/app/app.conf" },
          { path: "/etc/app/secret.env", secret: true },
          { path: "/etc/hosts" },
        ],
      }),
      "/run/quartermaster/maintenance",
    );
    assert.deepEqual([...dirs.keys()].sort(), ["/etc", "/etc/app", "/run/quartermaster"]);
    assert.deepEqual(
      Object.fromEntries(
        [...dirs.get("/etc/app")!.entries].map(([name, topics]) => [name, [...topics]]),
      ),
      {
        "app.conf": ["files"],
        "secret.env": ["files"],
      },
    );
    assert.deepEqual(
      [...dirs.get("/run/quartermaster")!.entries.get("maintenance")!],
      ["maintenance"],
    );
  });

  it("watches every unit directory for a unit and its template, and the whole drop-in directory", () => {
    const dirs = watchedDirectories(
      node({ systemd: { units: [{ name: "getty@tty1.service", dropins: {} }] } }),
      "/run/qm",
    );
    assert.deepEqual([...dirs.get("/etc/systemd/system")!.entries.keys()].sort(), [
      "getty@.service",
      "getty@tty1.service",
      "getty@tty1.service.d",
    ]);
    assert.ok(dirs.get("/usr/lib/systemd/system")!.entries.has("getty@.service"));
    assert.deepEqual(
      [...dirs.get("/etc/systemd/system/getty@tty1.service.d")!.anyEntry],
      ["systemd"],
    );
  });

  it("polls what no file event announces: sysctl and packages always, systemd only for enabled or active", () => {
    const spec = {
      system: { sysctl_parameters: { "vm.swappiness": "10" } },
      packages: { installed_manifest: { openssl: "*" } },
      files: [{ path: "/etc/x" }],
    };
    assert.deepEqual(
      polledDomains(node({ ...spec, systemd: { units: [{ name: "a.service", contents: "" }] } })),
      ["sysctl", "packages"],
    );
    assert.deepEqual(
      polledDomains(node({ ...spec, systemd: { units: [{ name: "a.service", active: true }] } })),
      ["sysctl", "packages", "systemd"],
    );
  });

  it("watches passwd, group, sudoers and declared homes' keys; sshd's files and pid file; declared certificate paths and folders", () => {
    const spec = {
      accounts: {
        users: { alice: { home: "/home/alice", authorized_keys: [] }, bob: { uid: 1001 } },
      },
      sshd: { settings: { PasswordAuthentication: "no" } },
      certificates: [{ path: "/etc/nginx/tls", valid_for: "30d" }],
    };
    const dirs = watchedDirectories(node(spec), "/var/qm/maintenance");
    const entries = (dir: string) =>
      Object.fromEntries([...dirs.get(dir)!.entries].map(([name, topics]) => [name, [...topics]]));
    assert.deepEqual(entries("/etc"), { passwd: ["accounts"], group: ["accounts"] });
    assert.deepEqual(entries("/home/alice/.ssh"), { authorized_keys: ["accounts"] });
    assert.deepEqual(entries("/etc/ssh"), {
      sshd_config: ["sshd"],
      "sshd_config.d": ["sshd"],
    });
    assert.deepEqual([...dirs.get("/etc/ssh/sshd_config.d")!.anyEntry], ["sshd"]);
    assert.deepEqual(entries("/run"), { "sshd.pid": ["sshd"] });
    assert.deepEqual(entries("/etc/nginx"), { tls: ["certificates"] });
    assert.deepEqual([...dirs.get("/etc/nginx/tls")!.anyEntry], ["certificates"]);
    // Users, groups and keys in declared homes: the files say it all. A restart of sshd from a
    // configuration elsewhere, and certificates aging, are polled.
    assert.deepEqual(polledDomains(node(spec)), ["sshd", "certificates"]);
    const sudo = { accounts: { sudo: ["alice ALL=(ALL) ALL"] } };
    assert.deepEqual(
      [...watchedDirectories(node(sudo), "/var/qm/maintenance").get("/etc")!.entries.keys()],
      ["passwd", "group", "sudoers", "sudoers.d"],
    );
    // A sudoers include may be anywhere.
    assert.deepEqual(polledDomains(node(sudo)), ["accounts"]);
  });
});
