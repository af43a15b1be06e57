// The planner's test bench: manifests from a real tree, drift items made by the audit's own code
// from synthetic findings, existing PRs as GitHub would list them.
import { after } from "node:test";
import type { Finding } from "../../../src/domains/domain.js";
import { domainByName } from "../../../src/domains/registry.js";
import { toDriftItems } from "../../../src/drift/drift.js";
import { driftSignature } from "../../../src/manifest/signature.js";
import { loadFleet, type Fleet } from "../../../src/manifest/load.js";
import { plan } from "../../../src/propose/plan.js";
import type { PlanInput } from "../../../src/propose/plan-input.js";
import type { NodeLists } from "../../../src/propose/node-lists.js";
import type { Action } from "../../../src/propose/proposal.js";
import { existingPull, type ExistingPull } from "../../../src/propose/pulls.js";
import type { DriftItem, NodeResult, Report } from "../../../src/report/schema.js";
import { reportOf } from "../../support/reports.js";
import { removeTree, writeTree } from "../../support/tree.js";

export const TREE: Record<string, string> = {
  "fleet.yaml": "system:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 1\n",
  "groups/web.yaml": [
    "# Front-end web servers.",
    "system:",
    "  sysctl_parameters:",
    "    net.core.somaxconn: 4096   # tuned for nginx",
    "    vm.swappiness: 10",
    "networking:",
    "  listening_ports: [tcp/22, tcp/443]",
    "",
  ].join("\n"),
  "nodes/web-01.yaml": "groups: [web]\n",
  "nodes/web-02.yaml": "groups: [web]\n",
  "nodes/web-03.yaml": "# the third web node\ngroups: [web]\n",
  "nodes/db-01.yaml":
    'system:\n  kernel_version: 6.1.0-28-amd64\nfiles:\n  - { path: /etc/motd, contents: "hello\\n" }\n',
};
export const PREFIX = "fleet-manifests";

const dir = await writeTree(TREE);
export const fleet: Fleet = await loadFleet(dir, { displayPrefix: PREFIX });
export const files = new Map(
  Object.entries(TREE).map(([name, text]) => [`${PREFIX}/${name}`, text]),
);
after(() => removeTree(dir));

export type Drift = { domain: string; finding: Finding };
export const somaxconn = (live: number): Drift => ({
  domain: "sysctl",
  finding: {
    key: "net.core.somaxconn",
    declared: "4096",
    live: String(live),
    path: ["system", "sysctl_parameters", "net.core.somaxconn"],
  },
});
export const listener = (port: string): Drift => ({
  domain: "ports",
  finding: {
    key: port,
    declared: "closed",
    live: "listening",
    path: ["networking", "listening_ports"],
  },
});
export const motd = (live: string): Drift => ({
  domain: "files",
  finding: {
    key: "/etc/motd",
    declared: "hello\n",
    live,
    path: ["files", "/etc/motd", "contents"],
    diff: `--- want /etc/motd\n+++ got /etc/motd\n@@ -1 +1 @@\n-hello\n+${live}`,
  },
});
export const syncookies = (live: string): Drift => ({
  domain: "sysctl",
  finding: {
    key: "net.ipv4.tcp_syncookies",
    declared: "1",
    live,
    path: ["system", "sysctl_parameters", "net.ipv4.tcp_syncookies"],
  },
});
export const kernel: Drift = {
  domain: "kernel",
  finding: {
    key: "kernel_version",
    declared: "6.1.0-28-amd64",
    live: "6.1.0-31-amd64",
    path: ["system", "kernel_version"],
  },
};

/** db-01 runs the kernel it declares, and its next boot runs `becomes`, installed beside it. */
export const latentKernel = (becomes: string): Drift => ({
  domain: "kernel",
  finding: {
    key: "kernel_version",
    declared: "6.1.0-28-amd64",
    live: "6.1.0-28-amd64",
    path: ["system", "kernel_version"],
    latent: { after: "reboot", becomes, because: `${becomes} installed` },
  },
});

/** A report as `audit --format json` writes it, drift items made by the audit's own code. */
export function report(
  drift: Record<string, Drift[]>,
  options: { unreachable?: string[]; fleetOverride?: Fleet } = {},
): Report {
  const source = options.fleetOverride ?? fleet;
  const ctx = {
    policy: source.settings.policy ?? {},
    waivers: [],
    tickets: source.tickets.map((t) => t.ticket),
    now: new Date(),
  };
  const nodes: NodeResult[] = source.nodes.map((node) => {
    if (options.unreachable?.includes(node.name))
      return {
        name: node.name,
        host: node.host,
        status: "unreachable",
        error: "connection refused",
        durationMs: 5,
        drift: [],
      };
    const items: DriftItem[] = (drift[node.name] ?? []).flatMap((d) =>
      toDriftItems(node, domainByName(d.domain)!, [d.finding], ctx),
    );
    return {
      name: node.name,
      host: node.host,
      status: items.some((i) => !i.acknowledged) ? "drift" : "clean",
      durationMs: 5,
      drift: items,
    };
  });
  return reportOf(nodes);
}

export function input(
  r: Report,
  pulls: ExistingPull[] = [],
  source: { fleet: Fleet; files: Map<string, string> } = { fleet, files },
  maxNewPrs?: number,
): PlanInput {
  return {
    report: r,
    nodes: source.fleet.nodes,
    tickets: source.fleet.tickets,
    files: source.files,
    manifestsPath: PREFIX,
    pulls,
    maxNewPrs,
  };
}

/**
 * The PRs GitHub would list after the actions ran, numbered from `first`; `lists`, the node lists
 * the state branch keeps for markers that name their nodes by digest.
 */
export function asPulls(actions: Action[], first = 1, lists?: NodeLists): ExistingPull[] {
  return actions.flatMap((a, i) =>
    a.type === "open"
      ? [
          existingPull(
            {
              number: first + i,
              state: "open" as const,
              merged: false,
              branch: a.branch,
              title: a.title,
              body: a.body,
              labels: a.labels,
            },
            lists,
          ),
        ]
      : [],
  );
}

export const opens = (actions: Action[]) =>
  actions.filter((a): a is Extract<Action, { type: "open" }> => a.type === "open");
/**
 * Lines of `after` that differ from `before`, position by position (edits here never add or remove
 * lines).
 */
export const changedLines = (before: string, after: string) => {
  const a = before.split("\n");
  const b = after.split("\n");
  return b.flatMap((line, i) => (line === a[i] ? [] : [[a[i], line]]));
};

export function driftSignatureOf(item: DriftItem): string {
  return driftSignature(item.domain, item.key, item.declared, item.live);
}

export const swappiness = (live: number): Drift => ({
  domain: "sysctl",
  finding: {
    key: "vm.swappiness",
    declared: "10",
    live: String(live),
    path: ["system", "sysctl_parameters", "vm.swappiness"],
  },
});

/** Plans on a manifest tree of the test's own: written, loaded, planned, removed. */
export async function planOnTree(
  tree: Record<string, string>,
  drift: Record<string, Drift[]>,
  pulls: ExistingPull[] = [],
  unreachable: string[] = [],
): Promise<Action[]> {
  const dir = await writeTree(tree);
  try {
    const loaded = await loadFleet(dir, { displayPrefix: PREFIX });
    const texts = new Map(Object.entries(tree).map(([name, text]) => [`${PREFIX}/${name}`, text]));
    return plan(
      input(report(drift, { fleetOverride: loaded, unreachable }), pulls, {
        fleet: loaded,
        files: texts,
      }),
    );
  } finally {
    await removeTree(dir);
  }
}
