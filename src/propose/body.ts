import type { Cause } from "../domains/cause.js";
import { SEVERITIES } from "../domains/domain.js";
import { causeGroupLine, causeRank } from "../report/cause-line.js";
import { wordList } from "../text/word-list.js";
import { latentOnly, latentTitle } from "../domains/latent-words.js";
import {
  domainByName,
  declaredWords,
  latentSentence,
  liveWords,
  remediationOf,
} from "../domains/registry.js";
import type { Ticket } from "../manifest/tickets.js";
import type { DriftItem } from "../report/schema.js";
import { visible } from "../text/escape.js";
import {
  codeCell,
  codeSpan,
  fencedBlock,
  htmlCode,
  nodeList,
  nodeSpans,
  truncate,
} from "../text/markdown.js";
import { formatMarker, type PullMarker } from "./marker.js";

/** GitHub refuses bodies over 65,536 characters; stay well under it. */
export const MAX_BODY_CHARS = 60_000;
/** PR titles (also the commit message's subject): one line, this long at most. */
export const MAX_TITLE_CHARS = 200;

const show = (value: unknown): string =>
  typeof value === "string" ? value : (wordList(value) ?? JSON.stringify(value) ?? "null");
const VALUE_CHARS = 120;
const DIFF_LINES = 200;
const DIFF_CHARS = 20_000;
/** The changed files a body names before it counts the rest. */
const FILE_LIST_CHARS = 2_000;
/** Room kept for the sentences saying how many paragraphs, rows and diffs were left out. */
const OMISSION_CHARS = 400;

const quote = (text: string) => codeSpan(text, 300);
/** "files", "files and packages", "files, packages and sysctl". */
const andList = (words: readonly string[]) =>
  words.length > 1 ? `${words.slice(0, -1).join(", ")} and ${words.at(-1)!}` : (words[0] ?? "");
const sentenceCase = (text: string) => `${text[0]!.toUpperCase()}${text.slice(1)}`;

/** One item's drift as a sentence: the domain's own words where it has them. */
function itemSentence(item: DriftItem, nodeCount: number): string {
  // Live as declared now: what the event changes, never "declared X but the host runs X".
  if (latentOnly(item)) return `${sentenceCase(latentSentence(item, quote))}.`;
  const key = codeSpan(item.key, VALUE_CHARS);
  const own = domainByName(item.domain)?.driftSentence;
  if (own) return own(item, key, nodeCount === 1 ? "the host" : "the hosts");
  return `${key} is declared ${codeSpan(show(item.declared), VALUE_CHARS)} but the host${nodeCount === 1 ? " runs" : "s run"} ${codeSpan(show(item.live), VALUE_CHARS)}.`;
}

/** A one-line title: host text escaped (no newline or control character survives), capped. */
export function pullTitle(text: string): string {
  return truncate(visible(text), MAX_TITLE_CHARS);
}

export interface BodyInput {
  kind: PullMarker["kind"];
  /** One row per node and drift item. */
  group: { node: string; item: DriftItem }[];
  marker: PullMarker;
  files: string[];
  /**
   * Why a ticket: Quartermaster's own sentence; `detail` is quoted as code (it may name host
   * values).
   */
  reason?: { text: string; detail?: string };
  ticket?: Ticket;
  /** Quartermaster's own sentences for the reviewer (host text only inside code spans). */
  notes?: string[];
}

const MEANING = {
  accept:
    "**Merging accepts the live state into the manifest**: the declared value becomes what the hosts run now, and the next audit reports them clean.\n\n**To reject**, close this pull request without merging (or comment `/quartermaster reject`). The next run records a remediation ticket instead, and this PR is never reopened.",
  ticket:
    "**Merging records a remediation ticket**: the operator commits to bring the hosts back to the declared state. While the ticket is open, this drift is reported as acknowledged and opens no new PR. When the drift is gone, Quartermaster proposes resolving the ticket.\n\n**Closing** without merging leaves the drift unacknowledged: it stays in every audit report, and this ticket is not proposed again.",
  resolve:
    "**Merging marks the ticket resolved** and moves it to `resolved/` in its folder: the drift it named is no longer present on any of its nodes.",
  lift: "**Merging lifts repeated overrides into the shared file**: no node's effective declared state changes (`quartermaster manifest-diff` shows none), there are only fewer overrides to keep.\n\n**Closing** without merging keeps the overrides as they are, and this lift is not proposed again for the same nodes.",
} as const;

/**
 * Why the rows drifted: one line per cause (its group across hosts, else its own words), at most
 * five, what changed a declared value's file first.
 */
function causeLines(rows: BodyInput["group"]): string[] {
  const byCause = new Map<string, { causes: Cause[]; nodes: Set<string> }>();
  for (const { node, item } of rows) {
    const { cause } = item;
    if (!cause) continue;
    const key = cause.group ?? `${cause.kind}\0${cause.evidence}`;
    let entry = byCause.get(key);
    if (!entry) byCause.set(key, (entry = { causes: [], nodes: new Set() }));
    entry.causes.push(cause);
    entry.nodes.add(node);
  }
  const rank = (entry: { causes: Cause[] }) =>
    entry.causes.reduce((min, cause) => Math.min(min, causeRank(cause)), Infinity);
  const lines = [...byCause.values()]
    .sort((a, b) => rank(a) - rank(b))
    .map(({ causes, nodes }) => causeGroupLine(causes, [...nodes].sort(), quote));
  const more = lines.length > 5 ? [`and ${lines.length - 5} more causes`] : [];
  return [...lines.slice(0, 5), ...more].map((line) => `${sentenceCase(line)}.`);
}

/** The earliest first sighting among `items`, when the report knows any (a time, no host text). */
export function firstSeen(items: readonly Pick<DriftItem, "firstSeen">[]): string | undefined {
  return items.reduce<string | undefined>(
    (min, { firstSeen: at }) => (at !== undefined && (min === undefined || at < min) ? at : min),
    undefined,
  );
}

/**
 * The PR body a reviewer decides from. Every host or manifest value is in a code span or a fenced
 * block; the marker is last; the whole stays under GitHub's limit (the report artifact has the
 * rest).
 */
export function pullBody(input: BodyInput): string {
  const head: string[] = [];
  const items = new Map(input.group.map(({ item }) => [item.key, item]));
  const first = input.group[0]?.item;
  const nodeCount = new Set(input.group.map((g) => g.node)).size;
  if (input.kind === "resolve" && input.ticket) {
    const t = input.ticket;
    head.push(
      `Remediation ticket ${codeSpan(t.id)} (${t.domain} ${codeSpan(t.key, VALUE_CHARS)}) is no longer needed: every node it names (${nodeSpans(t.nodes)}) was audited and the drift is gone.`,
    );
  } else if (input.kind === "lift") {
    head.push(...new Set(input.notes));
  } else if (first) {
    const on = `on ${nodeCount} node${nodeCount === 1 ? "" : "s"}`;
    // Every domain the rows carry, as the title names them (sorted), and the worst severity among
    // them, as the labels say: a files item beside a package's is not "packages drift".
    const domains = [...new Set(input.group.map(({ item }) => item.domain))].sort();
    const severities = new Set(input.group.map(({ item }) => item.severity));
    const worst = SEVERITIES.find((s) => severities.has(s)) ?? first.severity;
    head.push(
      items.size === 1
        ? `Quartermaster found **${first.severity}** ${latentOnly(first) ? "latent " : ""}${first.domain} drift ${on}: ${itemSentence(first, nodeCount)}`
        : `Quartermaster found **${worst}** ${andList(domains)} drift ${on}: ${items.size} items differ, listed below.`,
    );
    if (items.size === 1 && first.detail) head.push(`Detail: ${codeSpan(first.detail, 300)}`);
    if (items.size === 1 && first.latent && !latentOnly(first))
      head.push(`Then ${latentSentence({ ...first, latent: first.latent }, quote)}.`);
    head.push(...causeLines(input.group));
    const since = firstSeen(input.group.map(({ item }) => item));
    if (since) head.push(`Drifting since ${since} (first seen by an audit).`);
    if (input.reason)
      head.push(
        `This is a ticket because ${input.reason.text}${input.reason.detail ? `: ${codeSpan(input.reason.detail, 300)}` : ""}.`,
      );
    // A note two groups share (one shared value, one combining) is said once.
    head.push(...new Set(input.notes));
    // Drift that was waived or ticketed until lately: the reviewer sees why it is back.
    const lapsed = [...new Set(input.group.flatMap(({ item }) => item.lapsed ?? []))];
    if (lapsed.length)
      head.push(
        `No longer acknowledged: ${lapsed
          .slice(0, 5)
          .map((l) => codeSpan(l, 300))
          .join(", ")}${lapsed.length > 5 ? ` and ${lapsed.length - 5} more` : ""}.`,
      );
  }
  // Always shown, whatever else has to give way: what merging means, the files, the remediation
  // (the domain's own words, not the report's copy of them: a report file is not trusted markup).
  // An accept PR has none: merging it changes the manifest, not the hosts ("schedule a reboot into
  // the declared kernel" would move them away from what it accepts).
  const remediation = first && input.kind !== "accept" && remediationOf(first);
  const always = [
    MEANING[input.kind],
    `Files changed: ${fileList(input.files)}`,
    ...(remediation ? [`Remediation: ${remediation}`] : []),
  ];

  const row = ({ node, item }: BodyInput["group"][number]) =>
    `| ${codeCell(node)} | ${codeCell(item.key, VALUE_CHARS)} | ${codeCell(declaredWords(item) ?? show(item.declared), VALUE_CHARS)} | ${codeCell(liveWords(item) ?? show(item.live), VALUE_CHARS)}${latentOnly(item) ? ` (${codeCell(latentTitle(item), VALUE_CHARS)})` : ""}${items.size > 1 && item.detail ? ` (${codeCell(item.detail, VALUE_CHARS)})` : ""} | ${codeCell(`${item.source.file}:${item.source.line}`)} |`;
  // A value compared by hash is a secret or too big to show: no diff, whatever the item carries.
  // One diff per key and text, with the nodes it is on: eight hosts alike show it once.
  const diffed = [
    ...input.group
      .filter(({ item }) => item.diff && item.path.at(-1) !== "sha256")
      .reduce((byText, { node, item }) => {
        const key = JSON.stringify([item.key, item.diff]);
        const seen = byText.get(key);
        if (seen) seen.nodes.push(node);
        else byText.set(key, { nodes: [node], item });
        return byText;
      }, new Map<string, { nodes: string[]; item: DriftItem }>())
      .values(),
  ];
  const diff = ({ nodes, item }: (typeof diffed)[number]) => {
    const block = fencedBlock(item.diff!, "diff", { maxLines: DIFF_LINES, maxChars: DIFF_CHARS });
    const on = nodeList(nodes, 5, (name) => htmlCode(name));
    return `<details><summary>${on} ${htmlCode(item.key, VALUE_CHARS)}: -want +got</summary>\n\n${block}\n</details>`;
  };
  // Rows and diffs are written only as far as a body can hold them: a group of 100,000 nodes
  // shows the first few hundred.
  const rows = prefixes(input.group, row, MAX_BODY_CHARS);
  const diffs = prefixes(diffed, diff, MAX_BODY_CHARS);
  const marker = formatMarker(input.marker);
  const tableHead = input.group.length
    ? ["| node | key | declared | live | declared at |", "|---|---|---|---|---|"]
    : [];
  // The paragraphs get what is left once the marker, the table's head, the parts always shown and
  // the omission notes have their room: the table and diffs then shrink to nothing at worst, so the
  // whole always fits.
  const room = [marker, tableHead.join("\n"), ...always].reduce(
    (left, part) => left - part.length - 2,
    MAX_BODY_CHARS - OMISSION_CHARS,
  );
  const kept = [...fitParts(head, room), ...always];
  const omission = (rowCount: number, diffCount: number) =>
    rows.count - rowCount + (diffs.count - diffCount) > 0
      ? [
          `_${rows.count - rowCount} more rows and ${diffs.count - diffCount} diffs are left out to stay under GitHub's size limit; the audit report artifact has them all._`,
        ]
      : [];
  const fixed = [...kept, marker];
  // The body's length with the first rowCount rows and diffCount diffs, without writing it.
  const length = (rowCount: number, diffCount: number) => {
    const table = rows.count
      ? [tableHead.join("\n").length + rows.length(rowCount) + rowCount]
      : [];
    const parts = [
      ...fixed.map((part) => part.length),
      ...table,
      diffs.length(diffCount),
      ...omission(rowCount, diffCount).map((note) => note.length),
    ];
    return parts.reduce((sum, n) => sum + n, 0) + 2 * (parts.length - 1 + diffCount - 1);
  };
  let [rowCount, diffCount] = [rows.count, diffs.count];
  while (length(rowCount, diffCount) > MAX_BODY_CHARS && diffCount > 0)
    diffCount = Math.floor(diffCount / 2);
  while (length(rowCount, diffCount) > MAX_BODY_CHARS && rowCount > 0)
    rowCount = Math.floor(rowCount * 0.8);
  return [
    ...kept,
    ...(rows.count ? [[...tableHead, ...rows.first(rowCount)].join("\n")] : []),
    ...diffs.first(diffCount),
    ...omission(rowCount, diffCount),
    marker,
  ].join("\n\n");
}

/** Changed files as code spans, as many as FILE_LIST_CHARS hold, then how many more. */
function fileList(files: readonly string[]): string {
  const shown: string[] = [];
  let chars = 0;
  for (const file of files) {
    const span = codeSpan(file, VALUE_CHARS);
    if (shown.length && chars + span.length > FILE_LIST_CHARS) break;
    shown.push(span);
    chars += span.length + 2;
  }
  const more = files.length - shown.length;
  return `${shown.join(", ")}${more ? ` and ${more} more file${more === 1 ? "" : "s"}` : ""}`;
}

/**
 * The paragraphs `room` holds, in order: one that does not fit is left out whole (cut, it could
 * leave a code span open, its host text read as markup) and counted.
 */
function fitParts(parts: readonly string[], room: number): string[] {
  const kept: string[] = [];
  let used = 0;
  for (const part of parts)
    if (used + part.length + 2 <= room) {
      kept.push(part);
      used += part.length + 2;
    }
  const left = parts.length - kept.length;
  return left
    ? [
        ...kept,
        `_${left} more paragraph${left === 1 ? " is" : "s are"} left out to stay under GitHub's size limit._`,
      ]
    : kept;
}

/**
 * `write` of each of `items`, written only as far as asked, and only until their length passes
 * `cap`: past it, any longer prefix is too long (Infinity) without being written.
 */
function prefixes<T>(items: readonly T[], write: (item: T) => string, cap: number) {
  const written: string[] = [];
  const sums = [0];
  const extend = (count: number) => {
    while (written.length < count && sums.at(-1)! <= cap) {
      const text = write(items[written.length]!);
      written.push(text);
      sums.push(sums.at(-1)! + text.length);
    }
  };
  return {
    count: items.length,
    /** The first `count`'s total length, Infinity past the cap. */
    length(count: number): number {
      extend(count);
      return count < sums.length ? sums[count]! : Infinity;
    },
    first(count: number): string[] {
      extend(count);
      return written.slice(0, count);
    },
  };
}
