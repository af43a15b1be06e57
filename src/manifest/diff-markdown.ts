// manifest-diff's Markdown, for a pull request's job summary: every change in full (a value cut
// short could hide the one item that matters), sections left out whole past the size cap.
import { append } from "../collections.js";
import { compactValue, plural } from "../report/formats/common.js";
import { codeCell, codeSpan, fencedBlock, nodeList, textCell } from "../text/markdown.js";
import { showPath } from "../spec-path.js";
import type { KeyChange, ManifestDiff, NodeChange } from "./diff.js";

const value = (v: unknown) => codeCell(v === undefined ? "(not declared)" : compactValue(v));

/** The before and after cells: an item added to a list or removed from it says so. */
function cells(change: KeyChange): [string, string] {
  if (change.item === "added") return ["(not in the list)", `added ${value(change.after)}`];
  if (change.item === "removed") return [value(change.before), "(removed from the list)"];
  return [value(change.before), value(change.after)];
}

function table(changes: readonly KeyChange[], withSource: boolean): string[] {
  const head = withSource
    ? ["| key | before | after | declared at |", "|---|---|---|---|"]
    : ["| key | before | after |", "|---|---|---|"];
  return [
    ...head,
    ...changes.map(
      (c) =>
        `| ${codeCell(showPath(c.path))} | ${cells(c).join(" | ")} |${withSource ? ` ${c.declaredAt ? codeCell(c.declaredAt) : ""} |` : ""}`,
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
  // Before all: ssh reads this file on the runner, where a line of it can run any program.
  if (diff.sshConfig) {
    const { commands } = diff.sshConfig;
    sections.push(
      [
        "### ssh_config (read by ssh on the runner)",
        "",
        ...(commands.length
          ? [
              "**Lines that run a program on the runner after the change**: " +
                commands.map((c) => `${codeSpan(c.keyword)} (line ${c.line})`).join(", "),
              "",
            ]
          : []),
        fencedBlock(diff.sshConfig.diff, "diff"),
      ].join("\n"),
    );
  }
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
    const title = nodeList(names, 5);
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
  if (diff.sshConfig)
    out.push(
      `The ssh_config the workflows pass to ssh changes${diff.sshConfig.commands.length ? ", and runs a program on the runner" : ""}.`,
      "",
    );
  if (diff.knownHosts.length)
    out.push(`The pinned host keys of ${plural(diff.knownHosts.length, "host")} change.`, "");
  const ticketCount = new Set(diff.tickets.map((c) => c.path[0])).size;
  if (ticketCount)
    out.push(
      `${plural(ticketCount, "remediation ticket")} change${ticketCount === 1 ? "s" : ""}: what ${ticketCount === 1 ? "it acknowledges" : "they acknowledge"} may change.`,
      "",
    );
  if (diff.fleetSettings.length)
    out.push("Fleet-wide settings (policy, waivers, audit limits) change.", "");
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
