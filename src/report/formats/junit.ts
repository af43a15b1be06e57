// JUnit XML for CI test views. One testsuite per node, one testcase per drift item: GitLab,
// Jenkins and the GitHub test-report actions group by suite, so each host is one group and each
// drift key a test whose name stays stable across runs (history, "new failures").
import { append } from "../../collections.js";
import type { RunnerEscapes } from "../../text/escape.js";
import type { DriftItem, NodeResult } from "../schema.js";
import { compactDeclared, compactLive, compareDrift, compareText } from "./common.js";
import type { Renderer } from "./format.js";

interface TestCase {
  name: string;
  classname: string;
  seconds: number;
  outcome?: {
    element: "failure" | "error" | "skipped";
    message: string;
    type?: string;
    body?: string;
  };
}

export const renderJunit: Renderer = (report) => {
  const nodes = [...report.nodes].sort((a, b) => compareText(a.name, b.name));
  const suites = nodes.map((node) => ({ node, cases: testCases(node) }));
  const all = suites.flatMap((s) => s.cases);
  const totalSeconds = nodes.reduce((sum, n) => sum + n.durationMs / 1000, 0);
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites${attrs({ name: "quartermaster", ...counts(all), time: seconds(totalSeconds), timestamp: report.startedAt })}>`,
  ];
  for (const { node, cases } of suites) {
    const suite = {
      name: node.name,
      hostname: node.host,
      ...counts(cases),
      time: seconds(node.durationMs / 1000),
      timestamp: report.startedAt,
    };
    lines.push(`  <testsuite${attrs(suite)}>`);
    for (const c of cases) lines.push(...testCaseXml(c));
    lines.push(`  </testsuite>`);
  }
  lines.push(`</testsuites>`);
  return `${lines.join("\n")}\n`;
};

function testCases(node: NodeResult): TestCase[] {
  // The audit itself is a test: it passes when the node answered, whatever it found.
  const audit: TestCase = { name: "audit", classname: node.name, seconds: node.durationMs / 1000 };
  if (node.status === "unreachable" || node.status === "error") {
    const message = node.error ?? `node ${node.status}`;
    audit.outcome = {
      element: "error",
      message: firstLine(message),
      type: node.status,
      body: message,
    };
  } else if (node.status === "maintenance") {
    audit.outcome = {
      element: "skipped",
      message: node.error ?? "node in maintenance: not audited",
    };
  }
  const drift = [...node.drift].sort(compareDrift).map((item) => driftCase(node, item));
  // One test case per unknown domain, whatever the number of reasons: test views key cases by name.
  const reasons = new Map<string, string[]>();
  for (const { domain, reason } of node.unknown ?? []) append(reasons, domain, reason);
  const unknown = [...reasons].map(([domain, why]): TestCase => ({
    name: domain,
    classname: `${node.name}.${domain}`,
    seconds: 0,
    outcome: { element: "skipped", message: `unknown: ${why.join("; ")}` },
  }));
  return [audit, ...drift, ...unknown];
}

function driftCase(node: NodeResult, item: DriftItem): TestCase {
  const base = {
    name: `${item.domain} ${item.key}`,
    classname: `${node.name}.${item.domain}`,
    seconds: 0,
  };
  const summary = `declared ${compactDeclared(item, 200)}, live ${compactLive(item, 200)}`;
  // Tracked drift (an open ticket or a waiver) is skipped, not failed: CI stays red only for news.
  if (item.acknowledged) {
    const by = item.acknowledgedBy ? ` by ${item.acknowledgedBy}` : "";
    return { ...base, outcome: { element: "skipped", message: `acknowledged${by}: ${summary}` } };
  }
  const body = [
    `declared: ${compactDeclared(item)}`,
    `live: ${compactLive(item)}`,
    ...(item.detail ? [item.detail] : []),
    `declared at ${item.source.file}:${item.source.line}`,
    `remediation: ${item.remediation}`,
    ...(item.diff ? ["", item.diff.replace(/\n$/, "")] : []),
  ].join("\n");
  return {
    ...base,
    outcome: { element: "failure", message: summary, type: `drift.${item.severity}`, body },
  };
}

function testCaseXml(c: TestCase): string[] {
  const open = `    <testcase${attrs({ name: c.name, classname: c.classname, time: seconds(c.seconds) })}`;
  if (!c.outcome) return [`${open}/>`];
  const { element, message, type, body } = c.outcome;
  const head = `<${element}${attrs({ message, ...(type ? { type } : {}) })}`;
  const outcome = body === undefined ? `${head}/>` : `${head}>${escapeText(body)}</${element}>`;
  return [`${open}>`, `      ${outcome}`, `    </testcase>`];
}

function counts(cases: readonly TestCase[]) {
  const count = (element: string) =>
    String(cases.filter((c) => c.outcome?.element === element).length);
  return {
    tests: String(cases.length),
    failures: count("failure"),
    errors: count("error"),
    skipped: count("skipped"),
  };
}

function seconds(value: number): string {
  return value.toFixed(3);
}

function firstLine(text: string): string {
  return text.split("\n", 1)[0] ?? "";
}

function attrs(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([k, v]) => ` ${k}="${escapeAttribute(v)}"`)
    .join("");
}

// XML 1.0 cannot carry these at all, not even as &#N; references: shown as \xNN instead.
// Lone surrogates (from broken UTF-16) are not characters either.
const ILLEGAL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|\p{Cs}/gu;

function legal(text: string): string {
  return text.replace(ILLEGAL, (c) => {
    const code = c.charCodeAt(0);
    if (code >= 0xd800 && code <= 0xdfff) return "\ufffd";
    return code > 0xff ? `\\u${code.toString(16)}` : `\\x${code.toString(16).padStart(2, "0")}`;
  });
}

export function escapeText(text: string): string {
  return legal(text).replace(/[&<>\r]/g, (c) => ENTITIES[c]!);
}

// Newlines and tabs are references in attributes, or a parser would normalize them to spaces.
export function escapeAttribute(text: string): string {
  return legal(text).replace(/[&<>"\n\r\t]/g, (c) => ENTITIES[c]!);
}

// Character references: a `::` or `##[` the runner would act on can only fall in text or a value.
export const JUNIT_RUNNER_ESCAPES: RunnerEscapes = { colon: "&#58;", bracket: "&#91;" };

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "\n": "&#10;",
  "\r": "&#13;",
  "\t": "&#9;",
};
