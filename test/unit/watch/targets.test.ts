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
});
