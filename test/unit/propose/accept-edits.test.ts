// Where accepting a drift group edits the manifests, and what that costs as the fleet grows.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { SpecPath } from "../../../src/domains/domain.js";
import { acceptEdits, dependantsOf } from "../../../src/propose/accept-edits.js";
import { groupDrift } from "../../../src/propose/group.js";
import { MANIFEST_LISTS } from "../../../src/manifest/lists.js";
import { changedLines, files, fleet, PREFIX, report, somaxconn } from "./fixtures.js";

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
    const accepted = acceptEdits(group, files, counted, MANIFEST_LISTS);
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
