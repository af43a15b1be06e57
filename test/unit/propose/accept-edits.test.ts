// Where accepting a drift group edits the manifests, and what that costs as the fleet grows.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { acceptEdits, dependantsOf } from "../../../src/propose/accept-edits.js";
import { groupDrift } from "../../../src/propose/group.js";
import { SPEC_LIST_SHAPES } from "../../../src/manifest/lists.js";
import { parse } from "yaml";
import { describeAction } from "../../../src/propose/execute.js";
import {
  changedLines,
  files,
  fleet,
  opens,
  planOnTree,
  PREFIX,
  report,
  somaxconn,
  swappiness,
} from "./fixtures.js";
import type { SpecPath } from "../../../src/spec-path.js";

describe("acceptEdits", () => {
  it("asks who takes a shared value from its file once, not once per drifted node", () => {
    const drifted = {
      "web-01": [somaxconn(8192)],
      "web-02": [somaxconn(8192)],
      "web-03": [somaxconn(8192)],
    };
    const [group] = groupDrift(report(drifted), new Map(fleet.nodes.map((n) => [n.name, n])));
    assert.equal(group?.nodes.length, 3);
    const asked: string[] = [];
    const dependants = dependantsOf(fleet.nodes);
    const counted = (file: string, at: SpecPath) => {
      asked.push(`${file} ${at.join(".")}`);
      return dependants(file, at);
    };
    const accepted = acceptEdits([group], files, counted, SPEC_LIST_SHAPES);
    assert.ok("files" in accepted);
    const edited = accepted.files;
    // Every node taking the value drifted alike: the group file is edited, once.
    const web = `${PREFIX}/groups/web.yaml`;
    assert.deepEqual(Object.keys(edited), [web]);
    assert.deepEqual(changedLines(files.get(web)!, edited[web]!), [
      [
        "    net.core.somaxconn: 4096   # tuned for nginx",
        "    net.core.somaxconn: 8192   # tuned for nginx",
      ],
    ]);
    assert.deepEqual(asked, [`${web} system.sysctl_parameters.net.core.somaxconn`]);
  });
});

describe("acceptEdits: a value shared by many nodes", () => {
  const tree = (count: number) => ({
    "groups/app.yaml": "system:\n  sysctl_parameters:\n    vm.swappiness: 10   # shared\n",
    ...Object.fromEntries(
      Array.from({ length: count }, (_, i) => [`nodes/app-0${i + 1}.yaml`, "groups: [app]\n"]),
    ),
  });
  const planFor = async (count: number, drifted: number, unreachable: string[] = []) =>
    opens(
      await planOnTree(
        tree(count),
        Object.fromEntries(
          Array.from({ length: drifted }, (_, k) => [`app-0${k + 1}`, [swappiness(60)]]),
        ),
        [],
        unreachable,
      ),
    );

  it("most of many drifted alike: the shared file is edited, the others keep the old value in their own file, and the PR says so", async () => {
    const [pr, ...rest] = await planFor(7, 5);
    assert.equal(rest.length, 0);
    assert.deepEqual(Object.keys(pr!.files).sort(), [
      `${PREFIX}/groups/app.yaml`,
      `${PREFIX}/nodes/app-06.yaml`,
      `${PREFIX}/nodes/app-07.yaml`,
    ]);
    assert.equal(
      pr!.files[`${PREFIX}/groups/app.yaml`],
      "system:\n  sysctl_parameters:\n    vm.swappiness: 60   # shared\n",
    );
    assert.equal(
      String(
        parse(pr!.files[`${PREFIX}/nodes/app-07.yaml`]!).system.sysctl_parameters["vm.swappiness"],
      ),
      "10",
    );
    assert.match(
      pr!.body,
      /`fleet-manifests\/groups\/app\.yaml` declares this value for 7 nodes and 5 of the 7 audited drifted alike: the shared file is edited, and the other 2 keep the old value in their own files/,
    );
    assert.match(describeAction(pr!), /\[note: fleet-manifests\/groups\/app\.yaml declares/);
  });

  it("all of many drifted alike: the shared file is edited, and the PR says so without an empty rest", async () => {
    const [pr, ...rest] = await planFor(7, 7);
    assert.equal(rest.length, 0);
    assert.deepEqual(Object.keys(pr!.files), [`${PREFIX}/groups/app.yaml`]);
    assert.match(
      pr!.body,
      /^`fleet-manifests\/groups\/app\.yaml` declares this value for 7 nodes, and all 7 drifted alike: the shared file is edited, rather than 7 node files each overriding it\.$/m,
    );
    assert.doesNotMatch(pr!.body, /other 0/);
  });

  it("placement counts the audited takers: 7 of 9 drifted alike with 2 dark edit the shared file, the dark ones keep the old value in their own files", async () => {
    const [pr, ...rest] = await planFor(9, 7, ["app-08", "app-09"]);
    assert.equal(rest.length, 0);
    assert.deepEqual(Object.keys(pr!.files).sort(), [
      `${PREFIX}/groups/app.yaml`,
      `${PREFIX}/nodes/app-08.yaml`,
      `${PREFIX}/nodes/app-09.yaml`,
    ]);
    // Written as the group file has it: a number, not "10".
    for (const dark of ["app-08", "app-09"])
      assert.equal(
        parse(pr!.files[`${PREFIX}/nodes/${dark}.yaml`]!).system.sysctl_parameters["vm.swappiness"],
        10,
      );
    assert.match(
      pr!.body,
      /declares this value for 9 nodes and 7 of the 7 audited drifted alike: the shared file is edited, and the other 2 \(2 not audited this run\) keep the old value/,
    );
    // One of the seven audited drifting is an override of its own, in the same run.
    const [one] = await planFor(9, 1, ["app-08", "app-09"]);
    assert.deepEqual(Object.keys(one!.files), [`${PREFIX}/nodes/app-01.yaml`]);
  });

  it("many but not most: node overrides, and the PR and the plan say how many", async () => {
    const [pr] = await planFor(9, 4);
    assert.equal(Object.keys(pr!.files).length, 4);
    assert.ok(Object.keys(pr!.files).every((f) => f.includes("/nodes/app-0")));
    assert.match(
      pr!.body,
      /This writes the same value into 4 node files as overrides of `fleet-manifests\/groups\/app\.yaml`, which declares it for 9 nodes/,
    );
    assert.match(describeAction(pr!), /note: This writes the same value into 4 node files/);
  });

  it("a few: node overrides, nothing to say", async () => {
    const [pr] = await planFor(7, 3);
    assert.equal(Object.keys(pr!.files).length, 3);
    assert.doesNotMatch(pr!.body, /node files/);
  });
});
