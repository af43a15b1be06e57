import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { REPO_ROOT, runCli } from "../support/cli.js";
import { pyyamlLoad } from "../support/pyyaml.js";

const installed = async (mode?: string) => {
  const result = await runCli([
    "snapshot",
    "--local",
    "--category",
    "packages",
    ...(mode ? ["--packages", mode] : []),
  ]);
  assert.equal(result.exitCode, 0, result.stderr);
  const spec = parse(result.stdout) as {
    packages?: { installed_manifest: Record<string, string> };
  } | null;
  return { text: result.stdout, packages: spec?.packages?.installed_manifest };
};

describe("snapshot --packages", () => {
  it("by default declares each installed package as installed at any version", async () => {
    const { text, packages } = await installed();
    assert.ok(packages && Object.keys(packages).length > 0, text.slice(0, 500));
    assert.deepEqual(new Set(Object.values(packages)), new Set(["*"]));
    assert.ok("bash" in packages);
    const [py] = await pyyamlLoad([text]);
    assert.deepEqual(py, { value: { packages: { installed_manifest: packages } } });
  });

  it("versions pins each package at its live version, the same packages as names", async () => {
    const [names, versions] = await Promise.all([installed("names"), installed("versions")]);
    assert.deepEqual(Object.keys(versions.packages!), Object.keys(names.packages!));
    for (const [name, version] of Object.entries(versions.packages!)) {
      assert.match(version, /\d/, `${name} is pinned to a version, not "${version}"`);
    }
  });

  it("none leaves packages out", async () => {
    const { text, packages } = await installed("none");
    assert.equal(packages, undefined);
    assert.doesNotMatch(text, /installed_manifest/);
  });

  it("any other value is a usage error naming the flag and its choices: exit 2", async () => {
    const result = await runCli(["snapshot", "--local", "--packages", "every"]);
    assert.equal(result.exitCode, 2);
    assert.match(
      result.stderr,
      /--packages takes chosen, all, names, versions or none, not "every"/,
    );
    assert.equal(result.stdout, "");
  });
});

describe("snapshot's header", () => {
  it("first names the node-spec schema, relative to fleet-manifests/nodes/ where the README writes a snapshot", async () => {
    const result = await runCli(["snapshot", "--local", "--category", "kernel"]);
    assert.equal(result.exitCode, 0, result.stderr);
    const first = result.stdout.split("\n")[0]!;
    const schema = /^# yaml-language-server: \$schema=(\S+)$/.exec(first)?.[1];
    assert.ok(schema, first);
    assert.ok(
      existsSync(path.resolve(REPO_ROOT, "fleet-manifests/nodes", schema)),
      `${schema} from fleet-manifests/nodes/`,
    );
    assert.match(result.stdout.split("\n")[1]!, /^# Live state of this machine, taken /);
  });
});
