import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import { loadFleet } from "../../../src/manifest/load.js";
import {
  appendToFile,
  checkedExtension,
  planExtension,
  treeFiles,
} from "../../../src/runs/adopt-extend.js";
import { removeTree, writeTree } from "../../support/tree.js";

// A second adopt appends what it adds to files people wrote: every byte they hold stays.

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "qm-adopt-extend-"));
});
after(() => rm(dir, { recursive: true, force: true }));

const unit = { name: "b.service", enabled: true };
const file = { path: "/etc/b.conf", contents: "b = 1\n" };

async function appended(text: string, added: Record<string, unknown>): Promise<string> {
  const rel = "node.yaml";
  await writeFile(path.join(dir, rel), text);
  await appendToFile(dir, rel, added);
  return readFile(path.join(dir, rel), "utf8");
}

test("a list the file has takes the items after its last one; comments, quotes and the keys after it stay as they were", async () => {
  const text = [
    "# kept: a comment at the top",
    "systemd:",
    "  units:",
    "    - name: a.service   # why a is here",
    "      enabled: 'yes-not-a-bool'",
    "    # a comment below the list",
    "packages: { installed_manifest: { curl: '*' } }",
    "",
  ].join("\n");
  const out = await appended(text, { systemd: { units: [unit] }, files: [file] });
  const cut = out.indexOf("    - name: b.service");
  assert.ok(cut > 0, out);
  // The original text with one run inserted after the list, and one appended at the end.
  assert.equal(out.slice(0, cut), text.slice(0, cut));
  assert.deepEqual(parse(out), {
    systemd: { units: [{ name: "a.service", enabled: "yes-not-a-bool" }, unit] },
    packages: { installed_manifest: { curl: "*" } },
    files: [file],
  });
  const rest = out.slice(cut);
  assert.ok(
    rest.includes(
      "    # a comment below the list\npackages: { installed_manifest: { curl: '*' } }\n",
    ),
    out,
  );
});

test("a map the file has without the list takes the list's key after its own keys", async () => {
  const text = "groups: [web]\nsystemd:\n  other: true\nhost: web-01.example.net\n";
  const out = await appended(text, { systemd: { units: [unit] } });
  assert.equal(
    out,
    "groups: [web]\nsystemd:\n  other: true\n  units:\n    - name: b.service\n      enabled: true\nhost: web-01.example.net\n",
  );
});

test("a file without a final newline, and one with only comments", async () => {
  assert.equal(
    await appended("files:\n  - path: /etc/a\n    contents: a", { files: [file] }),
    "files:\n  - path: /etc/a\n    contents: a\n  - path: /etc/b.conf\n    contents: |\n      b = 1\n",
  );
  assert.equal(
    await appended("# only a comment\n", { files: [file] }),
    "# only a comment\nfiles:\n  - path: /etc/b.conf\n    contents: |\n      b = 1\n",
  );
});

describe("a second adopt's additions, factored over the tree", () => {
  const unitOf = (contents: string) => ({ name: "side.service", enabled: true, contents });
  const load = (tree: string) => loadFleet(tree, { displayPrefix: tree });

  test("the value most of a group hold goes to the group, the odd node's to its own file wherever it is, a node not snapshot keeps its layers from taking it", async () => {
    const tree = await writeTree({
      "fleet.yaml": "{}\n",
      "groups/app.yaml": "systemd:\n  units:\n    - name: a.service\n      enabled: true\n",
      "groups/db.yaml": "{}\n",
      "nodes/app-01.yaml": "groups: [app]\n",
      "nodes/app-02.yaml": "groups: [app]\n",
      "nodes/team/app-03.yml": "groups: [app]\n",
      "nodes/db-01.yaml": "groups: [db]\n",
      "nodes/db-02.yaml": "groups: [db]\n",
    });
    const { nodes } = await load(tree);
    const added = new Map([
      ["app-01", { systemd: { units: [unitOf("a")] } }],
      ["app-02", { systemd: { units: [unitOf("a")] } }],
      ["app-03", { systemd: { units: [unitOf("odd")] } }],
      // db-02 was not snapshot: db's file takes nothing.
      ["db-01", { systemd: { units: [unitOf("a")] } }],
    ]);
    const plan = await checkedExtension(tree, nodes, added);
    assert.deepEqual([...plan.files.keys()].sort(), [
      "groups/app.yaml",
      "nodes/db-01.yaml",
      "nodes/team/app-03.yml",
    ]);
    assert.deepEqual(plan.byNode.get("app-03"), ["groups/app.yaml", "nodes/team/app-03.yml"]);
    await removeTree(tree);
  });

  test("a node whose own entry has other fields than the group's (a root-only copy, by its hash) overrides them with null: the group takes the common entry", async () => {
    const secret = { path: "/etc/app.key", sha256: "0".repeat(64), mode: "0600" };
    const open = { path: "/etc/app.key", contents: "k\n", mode: "0644" };
    const tree = await writeTree({
      "groups/app.yaml": "{}\n",
      ...Object.fromEntries(
        ["app-01", "app-02", "app-03"].map((n) => [`nodes/${n}.yaml`, "groups: [app]\n"]),
      ),
    });
    const { nodes } = await load(tree);
    const added = new Map([
      ["app-01", { files: [open] }],
      ["app-02", { files: [open] }],
      ["app-03", { files: [secret] }],
    ]);
    // The loader merges entries field by field: app-03's own sets the group's contents to null,
    // so the two do not combine into one entry with contents and sha256, which it refuses.
    const planned = planExtension(nodes, added, treeFiles(tree, nodes));
    assert.deepEqual([...planned.files.keys()], ["groups/app.yaml", "nodes/app-03.yaml"]);
    assert.deepEqual(planned.files.get("nodes/app-03.yaml"), {
      files: [{ ...secret, contents: null }],
    });
    const plan = await checkedExtension(tree, nodes, added);
    assert.deepEqual([...plan.files.keys()].sort(), ["groups/app.yaml", "nodes/app-03.yaml"]);
    await removeTree(tree);
  });
});
