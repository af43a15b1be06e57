import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  childKey,
  isPrefix,
  mapAt,
  pathKey,
  pathOfKey,
  replaceAt,
  samePath,
  showPath,
  valueAt,
} from "../../src/spec-path.js";

describe("spec paths", () => {
  it("a key names one path, built whole or child by child, and gives the path back", () => {
    const path = ["files", "/etc/app.conf", "mode"];
    assert.equal(
      childKey(childKey(childKey(pathKey([]), "files"), "/etc/app.conf"), "mode"),
      pathKey(path),
    );
    assert.deepEqual(pathOfKey(pathKey(path)), path);
    assert.notEqual(pathKey(["a.b"]), pathKey(["a", "b"]));
  });

  it("shows a key that is not a plain name in brackets", () => {
    assert.equal(
      showPath(["system", "sysctl_parameters", "net.ipv4.ip_forward"]),
      "system.sysctl_parameters[net.ipv4.ip_forward]",
    );
    assert.equal(showPath(["files", "/etc/app.conf", "mode"]), "files[/etc/app.conf].mode");
    assert.equal(showPath(["ignore", 0, "key"]), "ignore[0].key");
    assert.equal(showPath([]), "");
  });

  it("compares paths: a prefix, and the same place whether a part is a number or text", () => {
    assert.ok(isPrefix(["system"], ["system", "kernel_modules"]));
    assert.ok(isPrefix(["system"], ["system"]));
    assert.ok(!isPrefix(["system", "kernel_modules"], ["system"]));
    assert.ok(!isPrefix(["files"], ["system", "files"]));
    assert.ok(samePath(["routes", 0], ["routes", "0"]));
    assert.ok(!samePath(["routes"], ["routes", 0]));
  });

  it("reads through maps only, and only their own keys", () => {
    const spec = { system: { kernel_modules: { loaded: ["floppy"] } }, ports: ["tcp/22"] };
    assert.deepEqual(valueAt(spec, ["system", "kernel_modules", "loaded"]), ["floppy"]);
    assert.equal(valueAt(spec, ["ports", 0]), undefined);
    assert.equal(valueAt(spec, ["system", "constructor"]), undefined);
    assert.equal(mapAt(spec, ["ports"]), undefined);
    assert.deepEqual(mapAt(spec, ["system"]), spec.system);
  });

  it("writes a copy, sharing what it leaves alone, making maps on the way", () => {
    const spec = {
      system: { kernel_modules: { loaded: ["a"] } },
      files: { "/x": { mode: "0644" } },
    };
    const set = replaceAt(spec, ["system", "sysctl_parameters", "vm.swappiness"], 10);
    assert.deepEqual(set.system, {
      kernel_modules: { loaded: ["a"] },
      sysctl_parameters: { "vm.swappiness": 10 },
    });
    assert.equal(set.files, spec.files);
    assert.deepEqual(spec.system, { kernel_modules: { loaded: ["a"] } });
    assert.deepEqual(replaceAt({}, ["system", "kernel_modules"], { loaded: ["a"] }), {
      system: { kernel_modules: { loaded: ["a"] } },
    });
    const removed = replaceAt(spec, ["files", "/x"], undefined);
    assert.deepEqual(removed.files, {});
    assert.equal(replaceAt(spec, ["nothing", "here"], undefined), spec);
  });

  it("writes a key named __proto__ as a key, never as the prototype", () => {
    const set = replaceAt({}, ["packages", "__proto__"], "1.0");
    const packages = set.packages as Record<string, unknown>;
    assert.ok(Object.hasOwn(packages, "__proto__"));
    assert.equal(Object.getPrototypeOf(packages), Object.prototype);
  });
});
