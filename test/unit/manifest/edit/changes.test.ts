import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { applyChanges } from "../../../../src/manifest/edit/apply.js";
import { declaredChanges, declaredIn } from "../../../../src/manifest/edit/changes.js";
import type { SpecListShapes } from "../../../../src/manifest/lists.js";

const SYSCTL = ["system", "sysctl_parameters"];
const FILES = ["files"];

describe("declaredChanges", () => {
  it("diffs a map per key: changed, added and removed keys, nothing for equal ones", () => {
    assert.deepEqual(
      declaredChanges(
        { "vm.swappiness": 1, "net.core.somaxconn": 4096, "fs.file-max": 10 },
        { "vm.swappiness": 1, "net.core.somaxconn": 65535, "kernel.pid_max": 99 },
        SYSCTL,
      ),
      [
        { path: [...SYSCTL, "net.core.somaxconn"], value: 65535 },
        { path: [...SYSCTL, "kernel.pid_max"], value: 99 },
        { path: [...SYSCTL, "fs.file-max"], delete: true },
      ],
    );
  });

  it("treats keys named like Object's own properties as keys: removed, added and changed", () => {
    const before = JSON.parse('{"constructor": "1", "__proto__": "2", "a": "3"}');
    const after = JSON.parse('{"__proto__": "4", "toString": "5", "a": "3"}');
    assert.deepEqual(declaredChanges(before, after, ["m"]), [
      { path: ["m", "__proto__"], value: "4" },
      { path: ["m", "toString"], value: "5" },
      { path: ["m", "constructor"], delete: true },
    ]);
  });

  it("returns nothing when the declaration already says what is live", () => {
    assert.deepEqual(declaredChanges({ a: { b: [1, 2] } }, { a: { b: [1, 2] } }, ["x"]), []);
    assert.deepEqual(
      declaredChanges(
        [{ path: "/a", mode: "0644" }],
        [{ path: "/a", mode: "0644" }],
        FILES,
        "path",
      ),
      [],
    );
  });

  it("recurses into nested maps but replaces plain lists whole, as layering does", () => {
    assert.deepEqual(
      declaredChanges(
        { loaded: ["br_netfilter"], absent: ["floppy"] },
        { loaded: ["br_netfilter", "overlay"], absent: ["floppy"] },
        ["system", "kernel_modules"],
      ),
      [{ path: ["system", "kernel_modules", "loaded"], value: ["br_netfilter", "overlay"] }],
    );
  });

  it("replaces a list of routes whole when one route differs, and a list that only changed order", () => {
    const route = (dst: string) => ({ dst, via: "10.0.0.1", dev: "eth0" });
    assert.deepEqual(
      declaredChanges(
        [route("default"), route("10.20.0.0/16")],
        [route("default"), route("10.30.0.0/16")],
        ["networking", "routes"],
      ),
      [{ path: ["networking", "routes"], value: [route("default"), route("10.30.0.0/16")] }],
    );
    assert.deepEqual(
      declaredChanges(
        ["tcp/22", "tcp/443"],
        ["tcp/443", "tcp/22"],
        ["networking", "listening_ports"],
      ),
      [{ path: ["networking", "listening_ports"], value: ["tcp/443", "tcp/22"] }],
    );
  });

  it("diffs a keyed list per item key, then per field; new items whole, gone items deleted", () => {
    const before = [
      { path: "/etc/a", mode: "0644", owner: "root" },
      { path: "/etc/b", contents: "x\n" },
    ];
    const after = [
      { path: "/etc/a", mode: "0600" },
      { path: "/etc/c", mode: "0644" },
    ];
    assert.deepEqual(declaredChanges(before, after, FILES, "path"), [
      { path: [...FILES, "/etc/a", "mode"], value: "0600" },
      { path: [...FILES, "/etc/a", "owner"], delete: true },
      { path: [...FILES, "/etc/c"], value: { path: "/etc/c", mode: "0644" } },
      { path: [...FILES, "/etc/b"], delete: true },
    ]);
  });

  it("accepts a keyed list already keyed into a map, as the loader holds it", () => {
    assert.deepEqual(
      declaredChanges(
        { "nginx.service": { name: "nginx.service", enabled: true } },
        [{ name: "nginx.service", enabled: false }],
        ["systemd", "units"],
        "name",
      ),
      [{ path: ["systemd", "units", "nginx.service", "enabled"], value: false }],
    );
  });

  it("adds every item of a keyed list the file did not declare at all", () => {
    assert.deepEqual(
      declaredChanges(undefined, [{ path: "/etc/a", mode: "0644" }], FILES, "path"),
      [{ path: [...FILES, "/etc/a"], value: { path: "/etc/a", mode: "0644" } }],
    );
  });

  it("sets a whole declaration the file lacks, deletes one that should go, and changes a scalar declaration", () => {
    assert.deepEqual(declaredChanges(undefined, { "vm.swappiness": 1 }, SYSCTL), [
      { path: SYSCTL, value: { "vm.swappiness": 1 } },
    ]);
    assert.deepEqual(declaredChanges({ "vm.swappiness": 1 }, undefined, SYSCTL), [
      { path: SYSCTL, delete: true },
    ]);
    assert.deepEqual(declaredChanges(undefined, undefined, SYSCTL), []);
    assert.deepEqual(
      declaredChanges("6.1.0-27-amd64", "6.1.0-28-amd64", ["system", "kernel_version"]),
      [{ path: ["system", "kernel_version"], value: "6.1.0-28-amd64" }],
    );
  });

  it("treats a field's list inside a keyed item as one value", () => {
    assert.deepEqual(
      declaredChanges(
        [{ name: "a.service", wants: ["x"] }],
        [{ name: "a.service", wants: ["x", "y"] }],
        ["systemd", "units"],
        "name",
      ),
      [{ path: ["systemd", "units", "a.service", "wants"], value: ["x", "y"] }],
    );
  });
});

describe("declaredChanges then applyChanges: an accept edit end to end", () => {
  const lists: SpecListShapes = {
    listFormPaths: [SYSCTL],
    keyedLists: [{ path: FILES, key: "path" }],
  };

  it("turns the db group's file declarations into the live ones, touching only the changed lines", () => {
    const before = readFileSync(
      new URL("../../../../fleet-manifests/groups/db.yaml", import.meta.url),
      "utf8",
    );
    const declared = declaredIn(before, lists).files;
    const live = [
      {
        path: "/etc/postgresql/15/main/conf.d/tuning.conf",
        contents: "shared_buffers = 16GB\neffective_cache_size = 24GB\n",
        mode: "0644",
        owner: "postgres",
      },
      {
        path: "/etc/postgresql/15/main/replication.env",
        sha256: "9f2c5d0e4b7a1c3e8f6a2d4b0c9e7f1a3b5d7c9e1f3a5b7d9c1e3f5a7b9d1c3e",
        secret: true,
      },
    ];
    const changes = declaredChanges(declared, live, FILES, "path");
    assert.deepEqual(changes, [
      { path: [...FILES, live[0]!.path, "contents"], value: live[0]!.contents },
    ]);
    const after = applyChanges(before, changes, lists);
    assert.equal(
      after,
      before.replace("      shared_buffers = 8GB\n", "      shared_buffers = 16GB\n"),
    );
    assert.deepEqual((parse(after) as { files: unknown }).files, live);
  });
});
