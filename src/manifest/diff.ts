// What a change to the manifests does to each node's effective declared state: the view a
// reviewer needs, since one line in a group file can change what dozens of nodes must run.
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { append } from "../collections.js";
import { codeCell, textCell } from "../text/markdown.js";
import { compactValue, compareText, plural } from "../report/formats/common.js";
import { itemKey, keyFieldAt, MANIFEST_LISTS, pathKey } from "./lists.js";
import type { Fleet, LoadedNode } from "./load.js";
import { sourceOf } from "./merge.js";

export interface KeyChange {
  /** Where the value sits in the effective spec; keyed list items by their key (files by path). */
  path: (string | number)[];
  before: unknown;
  after: unknown;
  /** file:line declaring the value after the change (before it, for a removal). */
  declaredAt?: string;
}

export interface NodeChange {
  node: string;
  kind: "added" | "removed" | "changed";
  changes: KeyChange[];
}

export interface ManifestDiff {
  /** Pinned host keys per host pattern: which keys Quartermaster trusts for which node. */
  knownHosts: KeyChange[];
  nodes: NodeChange[];
  fleetSettings: KeyChange[];
  tickets: KeyChange[];
}

/**
 * Leaf values by path: maps per key, keyed lists per item, other lists whole (their order matters).
 */
function leaves(
  value: unknown,
  path: (string | number)[] = [],
  out = new Map<string, { path: (string | number)[]; value: unknown }>(),
) {
  const listKey = keyFieldAt(MANIFEST_LISTS, path);
  if (
    Array.isArray(value) &&
    listKey !== undefined &&
    value.every((item) => itemKey(item, listKey) !== undefined)
  ) {
    for (const item of value) leaves(item, [...path, String(itemKey(item, listKey))], out);
  } else if (
    value &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    Object.keys(value).length > 0
  ) {
    for (const [key, child] of Object.entries(value)) leaves(child, [...path, key], out);
  } else {
    out.set(pathKey(path), { path, value });
  }
  return out;
}

function changesBetween(
  before: unknown,
  after: unknown,
  located?: (path: (string | number)[], removed: boolean) => string | undefined,
): KeyChange[] {
  const was = leaves(before);
  const now = leaves(after);
  const changes: KeyChange[] = [];
  for (const key of new Set([...was.keys(), ...now.keys()])) {
    const b = was.get(key);
    const a = now.get(key);
    if (b && a && isDeepStrictEqual(b.value, a.value)) continue;
    const path = (a ?? b)!.path;
    const declaredAt = located?.(path, !a);
    changes.push({ path, before: b?.value, after: a?.value, ...(declaredAt && { declaredAt }) });
  }
  return changes.sort((x, y) => compareText(showPath(x.path), showPath(y.path)));
}

function at(node: LoadedNode) {
  return (path: (string | number)[]) => {
    const origin = sourceOf(node, path);
    return `${origin.file}:${origin.line}`;
  };
}

function declared(node: LoadedNode): Record<string, unknown> {
  return { host: node.host, ...node.spec };
}

/**
 * known_hosts as host pattern -> its keys, each shown as ssh-keygen -l shows it (`ssh-ed25519
 * SHA256:...`), with a marker (`@cert-authority`, `@revoked`) when the line has one.
 */
export function pinnedKeys(text: string | undefined): Map<string, string[]> {
  const keys = new Map<string, Set<string>>();
  for (const raw of (text ?? "").split(/\r?\n/)) {
    const fields = raw.trim().split(/\s+/);
    if (!fields[0] || fields[0].startsWith("#")) continue;
    const marker = fields[0].startsWith("@") ? fields.shift() : undefined;
    const [hosts, type, blob] = fields;
    if (!hosts || !type) continue;
    const fingerprint =
      blob && /^[A-Za-z0-9+/]+=*$/.test(blob) ? sshFingerprint(blob) : (blob ?? "(no key)");
    const shown = [marker, type, fingerprint].filter(Boolean).join(" ");
    for (const host of hosts.split(",")) {
      const shownFor = keys.get(host);
      if (shownFor) shownFor.add(shown);
      else keys.set(host, new Set([shown]));
    }
  }
  // Sorted once, not at every line: a host on many lines stays linear.
  return new Map([...keys].map(([host, shown]) => [host, [...shown].sort(compareText)]));
}

/** `SHA256:…` as ssh-keygen -l prints it: the unpadded base64 SHA-256 of the key blob. */
const sshFingerprint = (blob: string) =>
  `SHA256:${createHash("sha256").update(Buffer.from(blob, "base64")).digest("base64").replace(/=+$/, "")}`;

function knownHostsChanges(before: string | undefined, after: string | undefined): KeyChange[] {
  const was = pinnedKeys(before);
  const now = pinnedKeys(after);
  return [...new Set([...was.keys(), ...now.keys()])]
    .sort(compareText)
    .filter((host) => !isDeepStrictEqual(was.get(host), now.get(host)))
    .map((host) => ({ path: [host], before: was.get(host), after: now.get(host) }));
}

export function diffFleets(base: Fleet, head: Fleet): ManifestDiff {
  const before = new Map(base.nodes.map((n) => [n.name, n]));
  const after = new Map(head.nodes.map((n) => [n.name, n]));
  const nodes: NodeChange[] = [];
  for (const name of [...new Set([...before.keys(), ...after.keys()])].sort(compareText)) {
    const b = before.get(name);
    const a = after.get(name);
    const changes = changesBetween(b && declared(b), a && declared(a), (path, removed) =>
      removed ? b && at(b)(path) : a && at(a)(path),
    );
    if (changes.length)
      nodes.push({ node: name, kind: !b ? "added" : !a ? "removed" : "changed", changes });
  }
  const ticketsOf = (fleet: Fleet) =>
    Object.fromEntries(
      fleet.tickets.map(({ ticket }) => [
        ticket.id,
        { status: ticket.status, nodes: ticket.nodes, key: `${ticket.domain} ${ticket.key}` },
      ]),
    );
  return {
    knownHosts: knownHostsChanges(base.knownHosts, head.knownHosts),
    nodes,
    fleetSettings: changesBetween(base.settings, head.settings),
    tickets: changesBetween(ticketsOf(base), ticketsOf(head)),
  };
}

/** `system.sysctl_parameters[net.ipv4.ip_forward]`, `files[/etc/app.conf].mode`. */
export function showPath(path: readonly (string | number)[]): string {
  return path
    .map((part, i) =>
      /^[A-Za-z_][\w-]*$/.test(String(part)) ? `${i ? "." : ""}${part}` : `[${part}]`,
    )
    .join("");
}

const value = (v: unknown) => (v === undefined ? "(not declared)" : compactValue(v, 120));

function table(changes: readonly KeyChange[], withSource: boolean): string[] {
  const head = withSource
    ? ["| key | before | after | declared at |", "|---|---|---|---|"]
    : ["| key | before | after |", "|---|---|---|"];
  return [
    ...head,
    ...changes.map(
      (c) =>
        `| ${codeCell(showPath(c.path))} | ${codeCell(value(c.before))} | ${codeCell(value(c.after))} |${withSource ? ` ${c.declaredAt ? codeCell(c.declaredAt) : ""} |` : ""}`,
    ),
  ];
}

const keysCell = (keys: unknown) =>
  Array.isArray(keys) ? keys.map((k) => codeCell(String(k))).join("<br>") : "(none)";

const KIND_NOTE = {
  added: "new node: merging starts auditing it against this state",
  removed: "node removed: merging stops auditing it",
  changed: "",
} as const;

/**
 * Markdown for a pull request's job summary. Nodes whose changes are identical (a group edit)
 * share one section; past `maxBytes` the remaining sections are counted, not shown.
 */
export function renderManifestDiff(diff: ManifestDiff, maxBytes: number): string {
  const out = ["## What merging this pull request changes", ""];
  const sections: string[] = [];
  // First: a new or changed pinned key decides which machine Quartermaster trusts as a node.
  if (diff.knownHosts.length) {
    sections.push(
      [
        "### Pinned host keys (known_hosts)",
        "",
        "_Check each new key against the host itself (its provisioning, or `ssh-keygen -lf` on its console): " +
          "Quartermaster trusts these keys and no others._",
        "",
        "| host | before | after |",
        "|---|---|---|",
        ...diff.knownHosts.map(
          (c) =>
            `| ${codeCell(String(c.path[0]))} | ${keysCell(c.before)} | ${keysCell(c.after)} |`,
        ),
      ].join("\n"),
    );
  }
  if (diff.fleetSettings.length)
    sections.push(
      [
        "### Fleet-wide settings (policy, waivers, audit limits)",
        "",
        ...table(diff.fleetSettings, false),
      ].join("\n"),
    );
  if (diff.tickets.length)
    sections.push(["### Remediation tickets", "", ...table(diff.tickets, false)].join("\n"));
  const alike = new Map<string, NodeChange[]>();
  for (const change of diff.nodes) {
    const key = JSON.stringify([change.kind, change.changes]);
    append(alike, key, change);
  }
  for (const group of alike.values()) {
    const names = group.map((g) => g.node);
    const title =
      names.length <= 5
        ? names.join(", ")
        : `${names.slice(0, 5).join(", ")} and ${names.length - 5} more`;
    const note = KIND_NOTE[group[0]!.kind];
    sections.push(
      [
        `### ${textCell(title)}${names.length > 1 ? ` (${names.length} nodes, the same change)` : ""}`,
        "",
        ...(note ? [`_${note}_`, ""] : []),
        ...table(group[0]!.changes, true),
      ].join("\n"),
    );
  }
  const nodeCount = diff.nodes.length;
  if (diff.knownHosts.length)
    out.push(`The pinned host keys of ${plural(diff.knownHosts.length, "host")} change.`, "");
  out.push(
    nodeCount
      ? `The effective declared state of ${plural(nodeCount, "node")} changes. Merging accepts it: the next audit reports drift against these values.`
      : "No node's effective declared state changes.",
  );
  let size = Buffer.byteLength(out.join("\n"), "utf8");
  let shown = 0;
  for (const section of sections) {
    const bytes = Buffer.byteLength(section, "utf8") + 2;
    // Room for the closing note.
    if (size + bytes > maxBytes - 200) break;
    out.push("", section);
    size += bytes;
    shown++;
  }
  if (shown < sections.length)
    out.push(
      "",
      `_${plural(sections.length - shown, "more section")} left out to stay under GitHub's size limit._`,
    );
  return `${out.join("\n")}\n`;
}
