import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { ManifestErrors } from "../../../src/errors.js";
import { loadFleet } from "../../../src/manifest/load.js";
import { sourceOf } from "../../../src/manifest/merge-layers.js";
import { MAX_MANIFEST_BYTES } from "../../../src/manifest/read.js";
import { removeTree, writeTree } from "../../support/tree.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

async function load(files: Record<string, string | Buffer>) {
  const dir = await writeTree(files);
  dirs.push(dir);
  return loadFleet(dir, { displayPrefix: "fleet-manifests" });
}

async function loadErrors(files: Record<string, string | Buffer>): Promise<string[]> {
  try {
    await load(files);
  } catch (error) {
    assert.ok(error instanceof ManifestErrors, `expected ManifestErrors, got ${error}`);
    return error.errors.map((e) => e.toString());
  }
  assert.fail("expected the manifests to be rejected");
}

describe("layering: fleet.yaml, then groups in order, then the node", () => {
  it("merges maps deeply, lets a later value win, deletes with null, and records each value's file and line", async () => {
    const fleet = await load({
      "fleet.yaml":
        "system:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 1\n    vm.swappiness: 60\n",
      "groups/base.yaml": "system:\n  sysctl_parameters:\n    net.core.somaxconn: 1024\n",
      "groups/web.yaml":
        "groups: [base]\nsystem:\n  kernel_version: 6.1.0-28-amd64\n  sysctl_parameters:\n    net.core.somaxconn: 4096\n",
      "nodes/web-01.yaml":
        "groups: [web]\nhost: web-01.example.net\nsystem:\n  sysctl_parameters:\n    vm.swappiness: null\n    fs.file-max: 100000\n",
    });
    const node = fleet.nodes[0]!;
    assert.equal(node.name, "web-01");
    assert.equal(node.host, "web-01.example.net");
    assert.deepEqual(node.groups, ["base", "web"]);
    assert.deepEqual(node.spec.system, {
      sysctl_parameters: {
        "net.ipv4.tcp_syncookies": "1",
        "net.core.somaxconn": "4096",
        "fs.file-max": "100000",
      },
      kernel_version: "6.1.0-28-amd64",
    });
    const at = (key: string) => {
      const o = sourceOf(node, ["system", "sysctl_parameters", key]);
      return `${o.file}:${o.line}`;
    };
    assert.equal(at("net.ipv4.tcp_syncookies"), "fleet-manifests/fleet.yaml:3");
    assert.equal(at("net.core.somaxconn"), "fleet-manifests/groups/web.yaml:5");
    assert.equal(at("fs.file-max"), "fleet-manifests/nodes/web-01.yaml:6");
  });

  it("accepts the seed's list form of sysctl_parameters and points at the list item", async () => {
    const fleet = await load({
      "nodes/db-01.yaml":
        "system:\n  sysctl_parameters:\n    - net.ipv4.tcp_syncookies = 1\n    - fs.protected_hardlinks=1\n",
    });
    const node = fleet.nodes[0]!;
    assert.deepEqual(node.spec.system, {
      sysctl_parameters: { "net.ipv4.tcp_syncookies": "1", "fs.protected_hardlinks": "1" },
    });
    const origin = sourceOf(node, ["system", "sysctl_parameters", "fs.protected_hardlinks"]);
    assert.deepEqual(
      [origin.line, origin.form, origin.yamlPath],
      [4, "list", ["system", "sysctl_parameters", 1]],
    );
  });

  it("defaults the host to the node name and reads fleet-wide settings", async () => {
    const fleet = await load({
      "fleet.yaml":
        "policy:\n  sysctl: { severity: high, on_drift: ticket }\nignore:\n  - { node: 'web-*', domain: sysctl, key: vm.*, reason: tuning trial, expires: 2030-01-01 }\n",
      "nodes/web-01.yaml": "{}\n",
    });
    assert.equal(fleet.nodes[0]!.host, "web-01");
    assert.deepEqual(fleet.settings.policy, { sysctl: { severity: "high", on_drift: "ticket" } });
    assert.equal(fleet.settings.ignore?.[0]?.expires, "2030-01-01");
  });

  it("holds nothing per node for node files that add nothing, beside their names", async () => {
    const fleet = await load({
      "fleet.yaml": "system:\n  sysctl_parameters:\n    vm.swappiness: 60\n",
      "nodes/a.yaml": "{}\n",
      "nodes/b.yaml": "# nothing of its own\n",
      "nodes/c.yaml": "ssh: { port: 2222 }\n",
      "nodes/d.yaml": "{}",
      "nodes/e.yaml": "{}\r\n",
    });
    const [a, b, c, d, e] = fleet.nodes;
    const own = (node: typeof a) => node!.layers.at(-1)!;
    assert.equal(own(a).file, "fleet-manifests/nodes/a.yaml");
    for (const same of [b, d, e]) {
      assert.equal(own(a).value, own(same).value);
      assert.equal(own(a).origins, own(same).origins);
      assert.equal(own(a).deletions, own(same).deletions);
      assert.equal(a!.ssh, same!.ssh);
      assert.equal(a!.groups, same!.groups);
      assert.equal(a!.spec, same!.spec);
    }
    assert.equal(own(e).file, "fleet-manifests/nodes/e.yaml");
    assert.equal(own(a).origins.size, 0);
    assert.equal(a!.layers.length, 2);
    assert.deepEqual(c!.ssh, { port: 2222 });
    assert.equal(sourceOf(c!, ["ssh", "port"]).line, 1);
    assert.equal(sourceOf(a!, ["system", "sysctl_parameters", "vm.swappiness"]).line, 3);
  });
});

describe("bad manifests are rejected with file:line:col", () => {
  it("malformed YAML", async () => {
    const errors = await loadErrors({ "nodes/a.yaml": "system:\n  kernel_version: [unclosed\n" });
    assert.match(errors[0]!, /^fleet-manifests\/nodes\/a\.yaml:\d+:\d+: invalid YAML/);
    // The place is said once, at the front.
    assert.doesNotMatch(errors[0]!, /at line \d+, column \d+/);
  });

  it("a waiver's expiry that is no date, or no day on the calendar, is one error each", async () => {
    const waiver = (expires: string) =>
      `ignore:\n  - { node: x, domain: sysctl, key: k, reason: r, expires: "${expires}" }\n`;
    for (const [expires, message] of [
      ["31-03-2027", "must be a date like 2026-12-31"],
      ["2026-02-30", "is not a real date or time (2026-12-31 or 2026-12-31T18:00:00Z)"],
    ]) {
      const errors = await loadErrors({ "fleet.yaml": waiver(expires!), "nodes/x.yaml": "{}\n" });
      assert.deepEqual(errors, [`fleet-manifests/fleet.yaml:2:60: ignore.0.expires: ${message}`]);
    }
  });

  it("an unknown key, with the nearest valid key suggested", async () => {
    const errors = await loadErrors({
      "nodes/a.yaml": "system:\n  sysctl_paramters:\n    vm.swappiness: 1\n",
    });
    assert.deepEqual(errors, [
      'fleet-manifests/nodes/a.yaml:2:3: unknown key "sysctl_paramters" in system (did you mean "sysctl_parameters"?)',
    ]);
  });

  it("policy on_drift by cause: read as written; an unknown cause kind or a wrong choice at its line", async () => {
    const fleet = await load({
      "fleet.yaml":
        "policy:\n  kernel:\n    on_drift: { package: accept, otherwise: ticket }\n  sysctl:\n    on_drift: { runtime: ticket, persisted: accept }\n",
      "nodes/a.yaml": "{}\n",
    });
    assert.deepEqual(fleet.settings.policy, {
      kernel: { on_drift: { package: "accept", otherwise: "ticket" } },
      sysctl: { on_drift: { runtime: "ticket", persisted: "accept" } },
    });
    const unknown = await loadErrors({
      "fleet.yaml": "policy:\n  kernel:\n    on_drift:\n      pakage: accept\n",
      "nodes/a.yaml": "{}\n",
    });
    assert.match(
      unknown[0]!,
      /^fleet-manifests\/fleet\.yaml:4:7: unknown key "pakage" in policy\.kernel\.on_drift/,
    );
    const wrong = await loadErrors({
      "fleet.yaml": "policy:\n  sysctl:\n    on_drift: { runtime: acept }\n",
      "nodes/a.yaml": "{}\n",
    });
    assert.match(
      wrong[0]!,
      /^fleet-manifests\/fleet\.yaml:3:15: policy\.sysctl\.on_drift: on_drift is accept, ticket, or a map from cause kinds \(package, .*otherwise\) to accept or ticket$/,
    );
  });

  it("a wrong type", async () => {
    const errors = await loadErrors({ "nodes/a.yaml": "groups: web\n" });
    assert.match(errors[0]!, /^fleet-manifests\/nodes\/a\.yaml:1:9: groups: .*expected array/);
  });

  it("an unknown group, with a suggestion that counts two swapped letters as one edit", async () => {
    const errors = await loadErrors({
      "groups/db.yaml": "{}\n",
      "groups/web.yaml": "{}\n",
      "nodes/a.yaml": "groups:\n  - wbe\n",
    });
    assert.deepEqual(errors, [
      'fleet-manifests/nodes/a.yaml:2:5: unknown group "wbe" (no groups/wbe.yaml) (did you mean "web"?)',
    ]);
  });

  it("a group include cycle", async () => {
    const errors = await loadErrors({
      "groups/a.yaml": "groups: [b]\n",
      "groups/b.yaml": "groups: [a]\n",
      "nodes/n.yaml": "groups: [a]\n",
    });
    assert.ok(
      errors.some((e) =>
        /^fleet-manifests\/groups\/b\.yaml:1:10: group include cycle: a -> b -> a$/.test(e),
      ),
      errors.join("\n"),
    );
  });

  it("a node name that ssh could read as an option, or that holds whitespace", async () => {
    const errors = await loadErrors({
      "nodes/-oProxyCommand=x.yaml": "{}\n",
      "nodes/web 01.yaml": "{}\n",
    });
    assert.equal(errors.length, 2);
    assert.ok(
      errors.every((e) => /node name ".*" \(from the file name\) must start with a letter/.test(e)),
      errors.join("\n"),
    );
  });

  it("a host that ssh could read as an option, or with control characters", async () => {
    const errors = await loadErrors({
      "nodes/a.yaml": "host: -oProxyCommand=touch /tmp/x\n",
      "nodes/b.yaml": 'host: "web\\u0007"\n',
    });
    assert.equal(errors.length, 2);
    assert.match(
      errors[0]!,
      /^fleet-manifests\/nodes\/a\.yaml:1:7: host: must start with a letter/,
    );
    assert.match(errors[1]!, /^fleet-manifests\/nodes\/b\.yaml:1:7: host: /);
  });

  it("a proxy_jump ssh could read as an option, or with spaces, quotes or an empty jump", async () => {
    const files: Record<string, string> = {
      "fleet.yaml": "ssh:\n  proxy_jump: audit@bastion-1:22,inner\n  max_sessions: 4\n",
      "nodes/ok.yaml": "{}\n",
    };
    const bad = ["-oProxyCommand=sh", "audit@-x", "bastion inner", "'\"bastion\"'", "a,,b", "a,"];
    bad.forEach((jump, i) => (files[`nodes/n${i}.yaml`] = `ssh:\n  proxy_jump: ${jump}\n`));
    const errors = await loadErrors(files);
    assert.equal(errors.length, bad.length, errors.join("\n"));
    for (const [i, error] of errors.entries())
      assert.match(
        error,
        new RegExp(
          `^fleet-manifests/nodes/n${i}\\.yaml:2:15: ssh\\.proxy_jump: must be one or more jump hosts \\(\\[user@\\]host\\[:port\\] or an ssh_config alias\\)`,
        ),
      );
  });

  it("a max_sessions that is not a positive whole number", async () => {
    const errors = await loadErrors({ "nodes/a.yaml": "ssh: { max_sessions: 0 }\n" });
    assert.match(errors[0]!, /^fleet-manifests\/nodes\/a\.yaml:1:\d+: ssh\.max_sessions: /);
  });

  it("a duplicate node", async () => {
    const errors = await loadErrors({
      "nodes/web-01.yaml": "{}\n",
      "nodes/dc2/web-01.yml": "{}\n",
    });
    assert.deepEqual(errors, [
      'fleet-manifests/nodes/web-01.yaml: duplicate node "web-01": also declared by fleet-manifests/nodes/dc2/web-01.yml',
    ]);
  });

  it("a file over the size cap is reported, not read", async () => {
    const errors = await loadErrors({
      "nodes/big.yaml": Buffer.alloc(MAX_MANIFEST_BYTES + 10, "#"),
    });
    assert.deepEqual(errors, [
      `fleet-manifests/nodes/big.yaml: file is ${MAX_MANIFEST_BYTES + 10} bytes, over the ${MAX_MANIFEST_BYTES}-byte cap for a manifest file; not read`,
    ]);
  });

  it("a list-form sysctl that is not name = value", async () => {
    const errors = await loadErrors({
      "nodes/a.yaml": "system:\n  sysctl_parameters:\n    - net.ipv4.tcp_syncookies 1\n",
    });
    assert.deepEqual(errors, [
      'fleet-manifests/nodes/a.yaml:3:7: "net.ipv4.tcp_syncookies 1" is not of the form "name = value"',
    ]);
  });

  it("an unknown policy domain, and every error in one pass", async () => {
    const errors = await loadErrors({
      "fleet.yaml": "policy:\n  sysctls: { severity: high }\n",
      "nodes/a.yaml": "bogus: 1\n",
    });
    assert.equal(errors.length, 2);
    assert.match(
      errors[0]!,
      /fleet\.yaml:2:3: unknown key "sysctls" in policy \(did you mean "sysctl"\?\)/,
    );
    assert.match(errors[1]!, /nodes\/a\.yaml:1:1: unknown key "bogus"/);
  });
});
