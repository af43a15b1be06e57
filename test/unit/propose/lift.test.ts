// Lifting repeated overrides: when most takers of a shared file override one of its values alike,
// one PR moves the value into the shared file, removes those overrides and writes the old value into
// the others' files; no node's effective declared state changes (manifest-diff's own comparison).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { diffFleets } from "../../../src/manifest/diff.js";
import { loadFleet } from "../../../src/manifest/load.js";
import { dependantsOf } from "../../../src/propose/accept-edits.js";
import { parseMarker } from "../../../src/propose/marker.js";
import { repeatedOverrides } from "../../../src/propose/lift.js";
import { removeTree, writeTree } from "../../support/tree.js";
import { asPulls, opens, planOnTree, PREFIX, swappiness } from "./fixtures.js";
import type { Action } from "../../../src/propose/proposal.js";

const GROUP = "groups/app.yaml";
const node = (override?: number) =>
  override === undefined
    ? "groups: [app]\n"
    : `groups: [app]\nsystem:\n  sysctl_parameters:\n    vm.swappiness: ${override}\n`;
/** A group of `overrides.length` nodes declaring swappiness 10; each node's own value, if any. */
const tree = (overrides: (number | undefined)[]) => ({
  [GROUP]:
    "system:\n  sysctl_parameters:\n    vm.swappiness: 10   # shared\n    vm.dirty_ratio: 20\n",
  ...Object.fromEntries(overrides.map((o, i) => [`nodes/app-0${i + 1}.yaml`, node(o)])),
});

/** The tree once a PR's files are merged into it (null removes a file). */
function merged(
  before: Record<string, string>,
  files: Record<string, string | null>,
): Record<string, string> {
  const after = { ...before };
  for (const [file, text] of Object.entries(files)) {
    const name = file.slice(PREFIX.length + 1);
    if (text === null) delete after[name];
    else after[name] = text;
  }
  return after;
}

async function loaded<T>(
  files: Record<string, string>,
  use: (fleet: Awaited<ReturnType<typeof loadFleet>>) => T,
) {
  const dir = await writeTree(files);
  try {
    return use(await loadFleet(dir, { displayPrefix: PREFIX }));
  } finally {
    await removeTree(dir);
  }
}

/** manifest-diff's node changes between two trees: none, for a lift. */
async function effectiveChanges(before: Record<string, string>, after: Record<string, string>) {
  const base = await loaded(before, (f) => f);
  const head = await loaded(after, (f) => f);
  return diffFleets(base, head).nodes;
}

const lifts = (actions: Action[]) => opens(actions).filter((a) => a.kind === "lift");

describe("lifting repeated overrides", () => {
  it("five of seven overriding alike: one PR edits the group file, removes the five overrides, and the other two keep the old value; no node's effective state changes", async () => {
    const before = tree([60, 60, 60, 60, 60, undefined, undefined]);
    const actions = await planOnTree(before, {});
    assert.equal(opens(actions).length, 1);
    const [pr] = lifts(actions);
    assert.ok(pr);
    assert.match(pr.branch, /^quartermaster--lift--sysctl--vm-swappiness--[0-9a-f]{16}$/);
    assert.equal(pr.title, `Lift repeated overrides into ${PREFIX}/${GROUP}: sysctl vm.swappiness`);
    assert.deepEqual(Object.keys(pr.files).sort(), [
      `${PREFIX}/${GROUP}`,
      ...[1, 2, 3, 4, 5, 6, 7].map((i) => `${PREFIX}/nodes/app-0${i}.yaml`),
    ]);
    assert.equal(
      pr.files[`${PREFIX}/${GROUP}`],
      "system:\n  sysctl_parameters:\n    vm.swappiness: 60   # shared\n    vm.dirty_ratio: 20\n",
    );
    assert.equal(pr.files[`${PREFIX}/nodes/app-01.yaml`], "groups: [app]\n");
    assert.equal(pr.files[`${PREFIX}/nodes/app-06.yaml`], node(10));
    const after = merged(before, pr.files);
    assert.deepEqual(await effectiveChanges(before, after), []);
    assert.match(
      pr.body,
      /`fleet-manifests\/groups\/app\.yaml` declares `vm\.swappiness` as `10` for 7 nodes, and 5 of them override it with `60` in their own files .*: the shared file now declares `60` and those overrides are removed; the other 2 taking it from there \(`app-06`, `app-07`\) keep `10` in their own files\./,
    );
    assert.equal(parseMarker(pr.body, pr.branch)?.kind, "lift");

    // Merged: the two overrides left are not most, so nothing is lifted back.
    assert.deepEqual(await planOnTree(after, {}), []);
  });

  it("counts every taker: a node overriding with another value keeps its own, and four of seven is most", async () => {
    const before = {
      ...tree([60, 60, 60, 60, 30, undefined, undefined]),
      // A carrier overriding another value too keeps that one.
      "nodes/app-01.yaml": `${node(60)}    vm.dirty_ratio: 5\n`,
    };
    const [pr, ...rest] = lifts(await planOnTree(before, {}));
    assert.equal(rest.length, 0);
    assert.ok(pr);
    assert.ok(!(`${PREFIX}/nodes/app-05.yaml` in pr.files));
    assert.equal(
      pr.files[`${PREFIX}/nodes/app-01.yaml`],
      "groups: [app]\nsystem:\n  sysctl_parameters:\n    vm.dirty_ratio: 5\n",
    );
    assert.deepEqual(await effectiveChanges(before, merged(before, pr.files)), []);
  });

  it("a single value of any domain: a package's version, the kernel release", async () => {
    const pinned = (version: string, kernel?: string) =>
      `groups: [app]\npackages:\n  installed_manifest:\n    nginx: ${version}\n${kernel ? `system:\n  kernel_version: ${kernel}\n` : ""}`;
    const before = {
      [GROUP]:
        "packages:\n  installed_manifest:\n    nginx: 1.22.1-9\nsystem:\n  kernel_version: 6.1.0-28-amd64\n",
      "nodes/app-01.yaml": pinned("1.24.0-2", "6.1.0-31-amd64"),
      "nodes/app-02.yaml": pinned("1.24.0-2", "6.1.0-31-amd64"),
      "nodes/app-03.yaml": "groups: [app]\n",
    };
    const [pr, ...rest] = lifts(await planOnTree(before, {}));
    assert.equal(rest.length, 0);
    assert.ok(pr);
    assert.match(pr.title, /: packages nginx and 1 more$/);
    assert.equal(
      pr.files[`${PREFIX}/${GROUP}`],
      "packages:\n  installed_manifest:\n    nginx: 1.24.0-2\nsystem:\n  kernel_version: 6.1.0-31-amd64\n",
    );
    assert.equal(pr.files[`${PREFIX}/nodes/app-01.yaml`], "groups: [app]\n");
    assert.deepEqual(await effectiveChanges(before, merged(before, pr.files)), []);
  });

  it("not most, or a single override: nothing to lift", async () => {
    assert.deepEqual(await planOnTree(tree([60, 60, 60, undefined, undefined, undefined]), {}), []);
    assert.deepEqual(await planOnTree(tree([60, undefined]), {}), []);
    // Overrides of equal value to the shared one are no override of it.
    assert.deepEqual(await planOnTree(tree([10, 10, 10]), {}), []);
  });

  it("waits while an accept of this run edits one of its files, and a lift closed unmerged is not proposed again", async () => {
    const before = tree([60, 60, 60, 60, 60, undefined, undefined]);
    const accepting = await planOnTree(
      { ...before, "fleet.yaml": "policy:\n  sysctl: { on_drift: accept }\n" },
      { "app-06": [swappiness(45)] },
    );
    assert.deepEqual(
      opens(accepting).map((a) => a.kind),
      ["accept"],
    );
    const [lift] = lifts(await planOnTree(before, {}));
    const [pull] = asPulls([lift!]);
    assert.deepEqual(await planOnTree(before, {}, [{ ...pull!, state: "closed" }]), []);
  });

  it("finds the overrides in one pass over the nodes, asking the takers of each overridden value once", async () => {
    const before = tree([60, 60, 60, 60, 60, undefined, undefined]);
    const asked: string[] = [];
    const found = await loaded(before, (fleet) => {
      const dependants = dependantsOf(fleet.nodes);
      return repeatedOverrides(fleet.nodes, (file, at) => {
        asked.push(`${file} ${at.join(".")}`);
        return dependants(file, at);
      });
    });
    assert.equal(found.length, 1);
    assert.deepEqual(asked, [`${PREFIX}/${GROUP} system.sysctl_parameters.vm.swappiness`]);
  });
});
