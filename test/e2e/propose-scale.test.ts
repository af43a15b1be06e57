// PRs about thousands of nodes, end to end: `propose` through the real CLI against the GitHub
// double (which refuses a body over 65,536 characters, as GitHub does) on the real git server. The
// first run opens one accept and one ticket PR covering every node, the second updates both in
// place (a node is clean again), the third keeps them, and once the drift is gone on every node
// the fourth closes both, reading their node lists back from the state branch.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { execa } from "execa";
import type { Finding } from "../../src/domains/domain.js";
import { domainByName, type DomainName } from "../../src/domains/registry.js";
import { toDriftItems } from "../../src/drift/drift.js";
import { loadFleet, type Fleet } from "../../src/manifest/load.js";
import { parseMarker } from "../../src/propose/marker.js";
import { NODE_LISTS_FILE, parseNodeLists } from "../../src/propose/node-lists.js";
import { STATE_BRANCH } from "../../src/propose/state.js";
import type { NodeResult } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { proposalWrites, suiteForge } from "../support/forge.js";
import { MAX_BODY } from "../support/github-double/repository.js";
import { reportOf } from "../support/reports.js";

const TOKEN = "ghs_propose_scale";
const M = "fleet-manifests";
// Long names, as fully qualified host names are: 2,500 of them list 127,000 characters in a marker
// that names every node (twice GitHub's limit), at a quarter of the cost of 10,000 short ones.
const COUNT = 2_500;
const DOMAIN = "prod.internal.example-company.net";
const names = Array.from(
  { length: COUNT },
  (_, i) => `fra1-web-${String(i).padStart(5, "0")}.${DOMAIN}`,
);

const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-scale-e2e-",
  files: {
    [`${M}/fleet.yaml`]:
      "policy:\n  sysctl: { on_drift: accept }\n  ports: { on_drift: ticket }\nnetworking:\n  listening_ports: [tcp/22]\n",
    [`${M}/groups/web.yaml`]: "system:\n  sysctl_parameters:\n    net.core.somaxconn: 4096\n",
    ...Object.fromEntries(names.map((name) => [`${M}/nodes/${name}.yaml`, "groups: [web]\n"])),
  },
});

/** The drift of every drifted node: one value to accept, one listener to ticket. */
const FINDINGS: [DomainName, Finding][] = [
  [
    "sysctl",
    {
      key: "net.core.somaxconn",
      declared: "4096",
      live: "8192",
      path: ["system", "sysctl_parameters", "net.core.somaxconn"],
    },
  ],
  [
    "ports",
    {
      key: "tcp/8080",
      declared: "closed",
      live: "listening",
      path: ["networking", "listening_ports"],
    },
  ],
];

let fleet: Fleet | undefined;
/**
 * A report, its drift items made by the audit's own code: `drifted` nodes run somaxconn 8192 and
 * listen on tcp/8080, the others are clean.
 */
async function reportFile(name: string, drifted: ReadonlySet<string>): Promise<string> {
  fleet ??= await loadFleet(path.join(await forge.checkout(), M), { displayPrefix: M });
  const ctx = { policy: fleet.settings.policy ?? {}, waivers: [], tickets: [], now: new Date() };
  const nodes: NodeResult[] = fleet.nodes.map((node) => {
    const drift = drifted.has(node.name)
      ? FINDINGS.flatMap(([domain, finding]) =>
          toDriftItems(node, domainByName(domain)!, [finding], ctx),
        )
      : [];
    return {
      name: node.name,
      host: node.host,
      status: drift.length ? "drift" : "clean",
      durationMs: 1,
      drift,
    };
  });
  const file = path.join(forge.work, `${name}.json`);
  await writeFile(file, JSON.stringify(reportOf(nodes)));
  return file;
}

async function propose(file: string) {
  const before = forge.double.writes().length;
  const result = await runCli(["propose", "--report", file, ...forge.repoArgs()], {
    env: forge.double.cliEnv(),
  });
  assert.equal(result.exitCode, 0, `${result.stdout}\n${result.stderr}`);
  assert.equal(result.stderr, "", "no warning, no refusal");
  return { ...result, writes: proposalWrites(forge.double.writes().slice(before)) };
}

/** The bot's PRs, each body within GitHub's limit, with its marker read back. */
function pulls() {
  return forge.double.pulls().map((pr) => {
    assert.ok((pr.body ?? "").length <= MAX_BODY, `#${pr.number}: ${pr.body?.length} characters`);
    const marker = parseMarker(pr.body, pr.head);
    assert.ok(marker && !("nodes" in marker), `#${pr.number} names its nodes by digest`);
    return { ...pr, marker };
  });
}

async function keptLists() {
  const dir = await forge.checkout();
  const text = (
    await execa("git", ["-C", dir, "show", `origin/${STATE_BRANCH}:${NODE_LISTS_FILE}`])
  ).stdout;
  return parseNodeLists(text).lists;
}

describe(`propose with ${COUNT} drifted nodes`, () => {
  it("opens its PRs under GitHub's body limit, updates them in place, keeps them, and closes them once the drift is gone on all nodes", async () => {
    const all = new Set(names);
    const first = await propose(await reportFile("all", all));
    const opened = pulls();
    assert.deepEqual(opened.map((p) => [p.marker.kind, p.marker.nodeCount, p.state]).sort(), [
      ["accept", COUNT, "open"],
      ["ticket", COUNT, "open"],
    ]);
    assert.match(first.stdout, /open +accept/);
    const lists = await keptLists();
    for (const pr of opened) assert.deepEqual(lists.get(pr.marker.nodeDigest), names);

    // One node clean again: the same two PRs, updated in place, their markers naming the rest.
    const fewer = names.slice(1);
    const second = await propose(await reportFile("fewer", new Set(fewer)));
    assert.match(second.stdout, /update #\d+ accept/);
    const updated = pulls();
    assert.deepEqual(
      updated.map((p) => [p.number, p.marker.nodeCount, p.state]).sort(),
      opened.map((p) => [p.number, COUNT - 1, "open"]).sort(),
      "no second PR",
    );
    for (const pr of updated)
      assert.deepEqual((await keptLists()).get(pr.marker.nodeDigest), fewer);

    // The same report again: nothing to write.
    const third = await propose(await reportFile("fewer-again", new Set(fewer)));
    assert.deepEqual(
      third.writes.map((w) => w.operation),
      [],
    );

    // Clean everywhere: both close, read from the state branch's lists.
    const fourth = await propose(await reportFile("clean", new Set()));
    assert.equal(fourth.stdout.match(/^close /gm)?.length, 2, fourth.stdout);
    for (const pr of pulls()) {
      assert.equal(pr.state, "closed");
      const [comment] = forge.double.comments(pr.number);
      assert.match(
        comment?.body ?? "",
        new RegExp(
          `no longer present on \`fra1-web-00001\\.${DOMAIN.replaceAll(".", "\\.")}\`, .* and ${COUNT - 11} more`,
        ),
      );
    }
  });
});
