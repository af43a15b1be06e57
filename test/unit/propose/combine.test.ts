// Open PRs never conflict with each other: drift whose edits meet on or next to one line of a file
// is one PR. git itself (`git merge-file`, the three-way merge a PR merge makes) is the judge.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { execa } from "execa";
import { plan } from "../../../src/propose/plan.js";
import type { ExistingPull } from "../../../src/propose/pulls.js";
import {
  asPulls,
  files,
  input,
  opens,
  PREFIX,
  report,
  somaxconn,
  swappiness,
  syncookies,
} from "./fixtures.js";

/** Whether git merges `theirs` into `ours` (both made from `base`) without a conflict. */
async function merges(base: string, ours: string, theirs: string): Promise<boolean> {
  const dir = await mkdtemp(path.join(tmpdir(), "qm-combine-"));
  try {
    const [b, o, t] = ["base", "ours", "theirs"].map((n) => path.join(dir, n)) as [
      string,
      string,
      string,
    ];
    await Promise.all([writeFile(b, base), writeFile(o, ours), writeFile(t, theirs)]);
    return (await execa("git", ["merge-file", "-p", o, b, t], { reject: false })).exitCode === 0;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("combine: pull requests that never conflict", () => {
  const web = `${PREFIX}/groups/web.yaml`;
  const fleetFile = `${PREFIX}/fleet.yaml`;

  it("drift on adjacent lines of one file is one PR saying why; drift elsewhere stays its own, and git merges either after the other", async () => {
    const drift = [somaxconn(8192), swappiness(60), syncookies("0")];
    const r = report({
      "web-01": drift,
      "web-02": drift,
      "web-03": drift,
      "db-01": [syncookies("0")],
    });
    const actions = plan(input(r));
    const prs = opens(actions);
    assert.equal(prs.length, 2, prs.map((p) => p.title).join("\n"));
    const both = prs.find((p) => web in p.files)!;
    const other = prs.find((p) => p !== both)!;
    assert.deepEqual(Object.keys(other.files), [fleetFile]);
    assert.match(
      both.title,
      /^Accept drift on web-01, web-02, web-03: sysctl net\.core\.somaxconn and 1 more$/,
    );
    assert.match(both.body, /edits adjacent lines of one file together/);
    const base = files.get(web)!;
    // As two PRs, git would refuse the second once the first is merged.
    assert.equal(
      await merges(
        base,
        base.replace("somaxconn: 4096", "somaxconn: 8192"),
        base.replace("swappiness: 10", "swappiness: 60"),
      ),
      false,
    );
    assert.ok(
      both.files[web]!.includes("somaxconn: 8192") && both.files[web]!.includes("swappiness: 60"),
    );
    // The two PRs share no file, so each merges whatever was merged before.
    for (const file of Object.keys(both.files)) assert.equal(file in other.files, false);
    assert.deepEqual(plan(input(r, asPulls(actions))), [], "re-planning changes nothing");
  });

  it("an accept rejected on its own is a ticket, never joined into its neighbour's PR", () => {
    const r = report({ "web-01": [somaxconn(8192)], "web-02": [swappiness(60)] });
    // Before they met: somaxconn's PR alone, then closed by a reviewer.
    const alone = opens(plan(input(report({ "web-01": [somaxconn(8192)] }))));
    const rejected: ExistingPull = { ...asPulls(alone)[0]!, state: "closed" };
    const prs = opens(plan(input(r, [rejected])));
    assert.equal(prs.length, 2, prs.map((p) => p.title).join("\n"));
    const [ticket, accept] = [
      prs.find((p) => /--ticket--/.test(p.branch)),
      prs.find((p) => /--accept--/.test(p.branch)),
    ];
    assert.match(ticket!.title, /somaxconn/);
    assert.match(accept!.title, /on web-02: vm\.swappiness/);
    assert.doesNotMatch(accept!.body, /somaxconn|adjacent lines/);
  });

  it("adjacent edits of different nodes' different changes are never one PR", () => {
    // web-02's own file takes both values at one place; but web-01's change is not web-03's:
    // accepting one must not accept the other. Merging one leaves the other to be rebuilt.
    const r = report({
      "web-01": [somaxconn(8192)],
      "web-02": [somaxconn(8192), swappiness(60)],
      "web-03": [swappiness(60)],
    });
    const prs = opens(plan(input(r)));
    assert.deepEqual(prs.map((p) => [p.title, Object.keys(p.files)]).sort(), [
      [
        "Accept sysctl drift on web-01, web-02: net.core.somaxconn: 4096 → 8192",
        [`${PREFIX}/nodes/web-01.yaml`, `${PREFIX}/nodes/web-02.yaml`],
      ],
      [
        "Accept sysctl drift on web-02, web-03: vm.swappiness: 10 → 60",
        [`${PREFIX}/nodes/web-02.yaml`, `${PREFIX}/nodes/web-03.yaml`],
      ],
    ]);
    for (const pr of prs) assert.doesNotMatch(pr.body, /adjacent lines/);
  });

  it("without adjacent lines nothing is combined", () => {
    const r = report({ "web-01": [somaxconn(8192)], "web-02": [swappiness(60)] });
    const prs = opens(plan(input(r)));
    assert.equal(prs.length, 2);
    for (const pr of prs) assert.doesNotMatch(pr.body, /adjacent lines/);
  });
});
