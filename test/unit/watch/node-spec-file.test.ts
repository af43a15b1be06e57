import assert from "node:assert/strict";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { ManifestErrors } from "../../../src/errors.js";
import { loadNodeFile } from "../../../src/manifest/load.js";
import { removeTree, writeTree } from "../../support/tree.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

async function specFile(text: string): Promise<string> {
  const dir = await writeTree({ "node-spec.yaml": text });
  dirs.push(dir);
  return path.join(dir, "node-spec.yaml");
}

describe("one node-spec file on its own (--manifest)", () => {
  it("loads as a one-node fleet named by the caller, with the seed's list form and origins", async () => {
    const file = await specFile(
      'system:\n  sysctl_parameters:\n    - net.ipv4.tcp_syncookies = 1\nfiles:\n  - { path: /etc/etc-file, contents: "hello world\\n" }\n',
    );
    const fleet = await loadNodeFile(file, "web-01", { displayPrefix: "/etc/quartermaster" });
    assert.equal(fleet.nodes.length, 1);
    const node = fleet.nodes[0]!;
    assert.equal(node.name, "web-01");
    assert.equal(node.host, "web-01");
    assert.deepEqual(node.spec.system, { sysctl_parameters: { "net.ipv4.tcp_syncookies": "1" } });
    assert.deepEqual(node.spec.files, [{ path: "/etc/etc-file", contents: "hello world\n" }]);
    assert.equal(node.file, "/etc/quartermaster/node-spec.yaml");
    assert.deepEqual(fleet.settings, {});
  });

  it("rejects groups (there is no groups/ beside it), invalid values and a missing file, with file:line", async () => {
    const file = await specFile("groups: [web]\nfiles:\n  - { path: relative }\n");
    await assert.rejects(loadNodeFile(file, "web-01"), (error: unknown) => {
      assert.ok(error instanceof ManifestErrors);
      assert.match(
        error.message,
        /node-spec\.yaml:3:\d+: files\.0\.path: must be an absolute path/,
      );
      return true;
    });
    const groupsOnly = await specFile("groups: [web]\n");
    await assert.rejects(
      loadNodeFile(groupsOnly, "web-01"),
      /node-spec\.yaml:1:\d+: a single node-spec file has no groups/,
    );
    await assert.rejects(
      loadNodeFile(path.join(path.dirname(file), "missing.yaml"), "web-01"),
      /node-spec file not found/,
    );
    const fifo = path.join(path.dirname(file), "fifo.yaml");
    await execa("mkfifo", [fifo]);
    await assert.rejects(
      loadNodeFile(fifo, "web-01"),
      /fifo\.yaml: is not a regular file \(a FIFO, socket or device\); not read/,
    );
    await assert.rejects(
      loadNodeFile(path.dirname(file), "web-01"),
      /: is a folder, not a node-spec file \(for a manifest tree, use --manifests DIR --nodes NAME\)/,
    );
  });
});
