import { z } from "zod";
import { DOMAIN_NAMES } from "../domains/domain.js";
import type { JsonValue } from "../domains/domain.js";
import type { Ticket } from "../manifest/tickets.js";
import type { DriftItem } from "../report/schema.js";

export const MARKER_VERSION = 1;
/** GitHub refuses bodies over 65,536 characters; stay well under it. */
export const MAX_BODY_CHARS = 60_000;

export const PullMarker = z.object({
  v: z.literal(MARKER_VERSION),
  kind: z.enum(["accept", "ticket", "resolve"]),
  signature: z.string(),
  /** The drift's domain: a partial (`--category`) audit only decides about PRs of the domains it audited. */
  domain: z.enum(DOMAIN_NAMES).optional(),
  nodes: z.array(z.string()),
  /** When the drift was first proposed: kept across updates so the body stays stable. */
  detected: z.string(),
  /** Hash of the files the PR writes: equal means the branch needs no new commit. */
  content: z.string(),
  ticket: z.string().optional(),
});
export type PullMarker = z.infer<typeof PullMarker>;

const MARKER_RE = /<!-- quartermaster-pr (\{.*?\}) -->/;

/** The hidden marker of a Quartermaster PR, or undefined for any other PR. */
export function parseMarker(body: string | null | undefined): PullMarker | undefined {
  const match = body ? MARKER_RE.exec(body) : null;
  if (!match) return undefined;
  try {
    const parsed = PullMarker.safeParse(JSON.parse(match[1]!));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

const cell = (value: unknown): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value as JsonValue);
  const short = text.length > 120 ? `${text.slice(0, 117)}…` : text;
  return `\`${short.replaceAll("`", "ˋ").replaceAll("|", "\\|").replaceAll("\n", "⏎")}\``;
};

export interface BodyInput {
  kind: PullMarker["kind"];
  group: { node: string; item: DriftItem }[];
  marker: PullMarker;
  files: string[];
  reason?: string;
  ticket?: Ticket;
}

const MEANING = {
  accept:
    "**Merging accepts the live state into the manifest**: the declared value becomes what the hosts run now, and the next audit reports them clean.\n\n**To reject**, close this pull request without merging. The next run records a remediation ticket instead, and this PR is never reopened.",
  ticket:
    "**Merging records a remediation ticket**: the operator commits to bring the hosts back to the declared state. While the ticket is open, this drift is reported as acknowledged and opens no new PR. When the drift is gone, Quartermaster proposes resolving the ticket.\n\n**Closing** without merging leaves the drift unacknowledged: it stays in every audit report.",
  resolve: "**Merging marks the ticket resolved**: the drift it named is no longer present on any of its nodes.",
} as const;

/** The PR body a reviewer decides from, capped below GitHub's limit; the report artifact has the rest. */
export function pullBody(input: BodyInput): string {
  const head: string[] = [];
  const first = input.group[0]?.item;
  if (input.kind === "resolve" && input.ticket) {
    const t = input.ticket;
    head.push(`Remediation ticket \`${t.id}\` (${t.domain} \`${t.key}\`: ${cell(t.declared)} declared, ${cell(t.live)} found) is no longer needed: every node it names (${t.nodes.join(", ")}) was audited and the drift is gone.`);
  } else if (first) {
    head.push(`Quartermaster found **${first.severity}** ${first.domain} drift on ${input.group.length} node${input.group.length === 1 ? "" : "s"}: \`${first.key}\` is declared ${cell(first.declared)} but the host${input.group.length === 1 ? " runs" : "s run"} ${cell(first.live)}.`);
    if (first.detail) head.push(`> ${first.detail}`);
    if (input.reason) head.push(`This is a ticket because ${input.reason}.`);
  }
  head.push(MEANING[input.kind], `Files changed: ${input.files.map((f) => `\`${f}\``).join(", ")}`);
  if (first) head.push(`Remediation: ${first.remediation}`);

  const rows = input.group.map(({ node, item }) => `| ${node} | ${cell(item.declared)} | ${cell(item.live)} | \`${item.source.file}:${item.source.line}\` |`);
  // A value compared by hash is a secret or too big to show: no diff, whatever the item carries.
  const diffs = input.group.filter(({ item }) => item.diff && item.path.at(-1) !== "sha256").map(({ node, item }) => `<details><summary>${node}: -want +got</summary>\n\n\`\`\`diff\n${item.diff!.replaceAll("```", "ˋˋˋ")}\n\`\`\`\n</details>`);
  const marker = `<!-- quartermaster-pr ${JSON.stringify(input.marker)} -->`;
  const tableHead = rows.length ? ["| node | declared | live | declared at |", "|---|---|---|---|"] : [];
  const assemble = (rowCount: number, diffCount: number) => {
    const omitted = rows.length - rowCount + (diffs.length - diffCount);
    return [
      ...head,
      ...(rows.length ? [[...tableHead, ...rows.slice(0, rowCount)].join("\n")] : []),
      ...diffs.slice(0, diffCount),
      ...(omitted > 0 ? [`_${rows.length - rowCount} more nodes and ${diffs.length - diffCount} diffs are left out to stay under GitHub's size limit; the audit report artifact has them all._`] : []),
      marker,
    ].join("\n\n");
  };
  let [rowCount, diffCount] = [rows.length, diffs.length];
  let body = assemble(rowCount, diffCount);
  while (body.length > MAX_BODY_CHARS && diffCount > 0) body = assemble(rowCount, (diffCount = Math.floor(diffCount / 2)));
  while (body.length > MAX_BODY_CHARS && rowCount > 0) body = assemble((rowCount = Math.floor(rowCount * 0.8)), diffCount);
  return body;
}
