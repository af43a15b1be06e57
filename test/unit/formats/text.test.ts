import { test } from "node:test";
import assert from "node:assert/strict";
import { FORMATS } from "../../../src/report/formats/index.js";
import { compactValue } from "../../../src/report/formats/common.js";
import type { FormatName } from "../../../src/report/formats/format.js";
import { renderText } from "../../../src/report/formats/text.js";
import type { NodeResult, Report } from "../../../src/report/schema.js";
import { summarize } from "../../../src/report/tally.js";
import { renderers } from "../../support/formats.js";
import { loadFleetReport } from "../../support/reports.js";

const plain = { color: false, verbose: false };
const ESC = "\x1b";

function block(output: string, node: string): string {
  const found = output
    .split("\n\n")
    .find((b) => b.startsWith(`${node} `) || b.startsWith(`${node}:`));
  assert.ok(found, `no block for ${node} in:\n${output}`);
  return found;
}

test("text is registered as a format", async () => {
  assert.equal((await FORMATS.text()).render, renderText);
});

test("each node gets a header with its status and duration", () => {
  const out = renderText(loadFleetReport(), plain);
  assert.match(out, /^db-01 \(db-01\.example\.net\): drift, 3 items, 2\.3s$/m);
  assert.match(out, /^db-02 \(db-02\.example\.net\): unreachable, 10\.0s$/m);
  assert.match(out, /^worker-01 \(worker-01\.example\.net\): error, 412ms$/m);
  assert.match(out, /^worker-02 \(worker-02\.example\.net\): maintenance, 380ms$/m);
});

test("a drift item shows severity, domain, key, declared and live, its detail and where it was declared", () => {
  const lines = renderText(loadFleetReport(), plain).split("\n");
  const at = lines.indexOf("  [high] sysctl net.core.somaxconn: declared 4096, live 1024");
  assert.ok(at >= 0);
  assert.equal(lines[at + 1], "    persisted value in /etc/sysctl.d/99-tuning.conf is also 1024");
  assert.equal(lines[at + 2], "    (declared at fleet-manifests/groups/web.yaml:12)");
});

test("drift is ordered critical first, then by domain and key, acknowledged items last", () => {
  const heads = (node: string) =>
    block(renderText(loadFleetReport(), plain), node)
      .split("\n")
      .filter((l) => l.startsWith("  ["))
      .map((l) => l.slice(2, l.indexOf(":")));
  assert.deepEqual(heads("web-01"), [
    "[critical] routes default",
    "[high] files /etc/app/secret.env",
    "[high] files /etc/nginx/nginx.conf",
    "[high] ports tcp/8080",
    "[high] sysctl net.core.somaxconn",
    "[high] systemd nginx.service",
    "[low] io_scheduler vda",
  ]);
  // The acknowledged kernel item is high severity but still comes after the medium one.
  assert.deepEqual(heads("db-01"), [
    "[high] packages openssl",
    "[medium] sysctl vm.swappiness",
    "[high] kernel kernel_version",
  ]);
  assert.match(
    block(renderText(loadFleetReport(), plain), "db-01"),
    /kernel_version: .* \(acknowledged\)\n.*\n    acknowledged by remediations\/db-01-kernel-2b3c4d5e\.yaml/,
  );
});

test("values are compact: simple strings bare, others quoted, objects as JSON, null as absent", () => {
  const out = renderText(loadFleetReport(), plain);
  assert.ok(out.includes("packages openssl: declared 3.0.15-1~deb12u1, live 3.0.14-1~deb12u2\n"));
  assert.ok(
    out.includes(
      'routes default: declared {"dst":"default","via":"10.0.0.1","dev":"eth0"}, live {"dst":"default","via":"10.0.0.254","dev":"eth0"}',
    ),
  );
  assert.ok(
    out.includes(
      'ports tcp/8080: declared (absent), live {"process":"python3","pid":41877,"address":"0.0.0.0"}',
    ),
  );
  assert.ok(out.includes('files /etc/motd: declared "Authorized use only | ops `on-call`\\n"'));
});

test("long values are cut in the default view and whole in verbose", () => {
  const report = loadFleetReport();
  report.nodes[0]!.drift[0]!.live = "x".repeat(300);
  assert.ok(renderText(report, plain).includes(`live ${"x".repeat(99)}…`));
  assert.ok(
    renderText(report, { color: false, verbose: true }).includes(`live ${"x".repeat(300)}\n`),
  );
});

test("diffs are indented under their item; a secret file shows no contents", () => {
  const web = block(renderText(loadFleetReport(), plain), "web-01");
  assert.ok(
    web.includes(
      "    --- want /etc/nginx/nginx.conf\n    +++ got /etc/nginx/nginx.conf\n    @@ -1,4 +1,4 @@\n     user www-data;\n    -worker_processes auto;\n    +worker_processes 2;\n",
    ),
  );
  const secret = web.slice(
    web.indexOf("files /etc/app/secret.env"),
    web.indexOf("files /etc/nginx/nginx.conf"),
  );
  assert.ok(secret.includes("secret: compared by hash, contents not shown"));
  assert.ok(!secret.includes("---"), "no diff for a secret");
});

test("without color there is no ANSI escape at all, even from hostile host output", () => {
  for (const verbose of [false, true]) {
    const out = renderText(loadFleetReport(), { color: false, verbose });
    assert.ok(!out.includes(ESC), `escape found (verbose ${verbose})`);
  }
  // The /etc/motd diff carries ESC and BEL from the host: shown, not interpreted.
  assert.ok(
    renderText(loadFleetReport(), plain).includes("    +\\x1b[31mOWNED\\x1b[0m | see `id`\\x07"),
  );
});

test("with color, diff lines are red and green and host escapes are still neutralized", () => {
  const out = renderText(loadFleetReport(), { color: true, verbose: false });
  assert.ok(out.includes(`${ESC}[31m    -worker_processes auto;${ESC}[0m`));
  assert.ok(out.includes(`${ESC}[32m    +worker_processes 2;${ESC}[0m`));
  assert.ok(out.includes(`${ESC}[32m    +\\x1b[31mOWNED`));
});

test("unreachable and failed nodes show their error, multi-line messages aligned", () => {
  const out = renderText(loadFleetReport(), plain);
  assert.ok(
    block(out, "db-02").includes(
      "  error: ssh: connect to host db-02.example.net port 22: Connection timed out",
    ),
  );
  assert.ok(
    block(out, "worker-01").endsWith(
      "  error: host key verification failed for worker-01.example.net\n         the host key changed since it was recorded in known_hosts",
    ),
  );
  assert.ok(
    block(out, "worker-02").includes(
      "  maintenance marker /run/quartermaster/maintenance is present",
    ),
  );
});

test("unknown domains are listed dimly, never as drift", () => {
  const colored = renderText(loadFleetReport(), { color: true, verbose: false });
  assert.ok(
    colored.includes(
      `${ESC}[2m  systemd: unknown (systemd is installed but not running (PID 1 is not systemd))${ESC}[0m`,
    ),
  );
  const verbose = renderText(loadFleetReport(), { color: false, verbose: true });
  assert.ok(
    block(verbose, "web-02").includes(
      "  kernel_modules: unknown (no /proc/modules: kernel built without loadable module support)",
    ),
  );
});

test("clean nodes collapse into one line by default and are listed in verbose", () => {
  const out = renderText(loadFleetReport(), plain);
  assert.ok(!/^web-02 /m.test(out));
  assert.ok(out.includes("\n3 clean nodes: web-02, web-03, web-04\n"));
  assert.ok(out.includes("\n1 clean node could not show some domains (--verbose lists it)\n"));
  const verbose = renderText(loadFleetReport(), { color: false, verbose: true });
  assert.match(verbose, /^web-03 \(web-03\.example\.net\): clean, 1\.6s$/m);
  assert.ok(!verbose.includes("clean nodes:"));
});

test("a big fleet's clean list is truncated with a count of the rest", () => {
  const nodes: NodeResult[] = Array.from({ length: 500 }, (_, i) => ({
    name: `app-${String(i).padStart(3, "0")}`,
    host: `app-${i}`,
    status: "clean",
    durationMs: 900,
    drift: [],
  }));
  const report: Report = { ...loadFleetReport(), nodes, summary: summarize(nodes) };
  const out = renderText(report, plain);
  assert.match(out, /^500 clean nodes: app-000, app-001, .*, … and \d+ more$/m);
  assert.ok(out.split("\n").every((line) => line.length < 120));
  assert.equal(out.split("\n").filter(Boolean).length, 2);
});

test("the summary line counts nodes by status, new drift apart from acknowledged drift, and unknown items", () => {
  const out = renderText(loadFleetReport(), plain);
  assert.ok(
    out.endsWith(
      "\n9 nodes: 3 clean, 3 drifted, 11 drift items, 1 acknowledged, 1 unreachable, 1 error, 1 in maintenance, 2 items unknown (kernel_modules, systemd)\n",
    ),
    out,
  );
});

const item = (fields: Partial<NodeResult["drift"][number]>): NodeResult["drift"][number] => ({
  ...loadFleetReport().nodes.find((n) => n.name === "web-01")!.drift[0]!,
  ...fields,
});
const reportOf = (nodes: NodeResult[]): Report => ({
  ...loadFleetReport(),
  nodes,
  summary: summarize(nodes),
});

test("waived and ticketed drift on a clean node is counted in the summary line as acknowledged, not as drift items", () => {
  const node: NodeResult = {
    name: "web-09",
    host: "web-09",
    status: "clean",
    durationMs: 10,
    drift: [
      item({ acknowledged: true, acknowledgedBy: "waiver: vendor kernel" }),
      item({ key: "vm.x", acknowledged: true, acknowledgedBy: "remediations/t.yaml" }),
    ],
  };
  assert.ok(renderText(reportOf([node]), plain).endsWith("\n1 node: 1 clean, 2 acknowledged\n"));
});

test("a clean node says how many items in how many domains were checked", () => {
  const node: NodeResult = {
    name: "web-09",
    host: "web-09",
    status: "clean",
    durationMs: 10,
    drift: [],
    checked: { items: 14, domains: 5 },
  };
  const verbose = renderText(reportOf([node]), { color: false, verbose: true });
  assert.match(verbose, /^web-09: clean \(14 items in 5 domains\), 10ms$/m);
  assert.match(
    renderText(reportOf([node]), plain),
    /^1 clean node: web-09 \(14 items in 5 domains\)$/m,
  );
  const one: NodeResult = { ...node, checked: { items: 1, domains: 1 } };
  assert.match(
    renderText(reportOf([one]), { color: false, verbose: true }),
    /^web-09: clean \(1 item in 1 domain\), 10ms$/m,
  );
});

test("a node with unreadable declared items says how many are unknown, and the summary line counts them", () => {
  const node: NodeResult = {
    name: "web-09",
    host: "web-09",
    status: "clean",
    durationMs: 10,
    drift: [],
    checked: { items: 3, domains: 1 },
    unknown: [
      { domain: "files", reason: "/etc/shadow: cannot read it" },
      { domain: "files", reason: "/root/x: cannot read it" },
    ],
  };
  const verbose = renderText(reportOf([node]), { color: false, verbose: true });
  assert.match(verbose, /^web-09: clean \(3 items in 1 domain\), 2 unknown, 10ms$/m);
  assert.ok(verbose.includes("\n  files: unknown (/etc/shadow: cannot read it)\n"));
  assert.ok(verbose.endsWith("\n1 node: 1 clean, 2 items unknown (files)\n"));
});

test("--verbose shows each drift item's remediation, escaped; the default view does not", () => {
  const node: NodeResult = {
    name: "web-09",
    host: "web-09",
    status: "drift",
    durationMs: 10,
    drift: [item({ remediation: "Run `sysctl -p`\x1b[2J now" })],
  };
  const verbose = renderText(reportOf([node]), { color: false, verbose: true });
  assert.ok(verbose.includes("\n    remediation: Run `sysctl -p`\\x1b[2J now\n"), verbose);
  assert.ok(!verbose.includes("\x1b"));
  assert.ok(!renderText(reportOf([node]), plain).includes("remediation:"));
});

test("a node that took more than one SSH try says how many; clean ones are counted until --verbose", () => {
  const report = loadFleetReport();
  const byName = (name: string) => report.nodes.find((n) => n.name === name)!;
  byName("db-02").tries = 6;
  byName("web-02").tries = 3;
  byName("web-03").tries = 1;
  const out = renderText(report, plain);
  assert.match(out, /^db-02 \(db-02\.example\.net\): unreachable, 6 SSH tries, 10\.0s$/m);
  assert.match(
    out,
    /^1 clean node answered only after SSH connection retries \(--verbose lists it\)$/m,
  );
  const verbose = renderText(report, { ...plain, verbose: true });
  assert.match(block(verbose, "web-02"), /: clean, .*3 SSH tries, /);
  assert.doesNotMatch(block(verbose, "web-03"), /tries/);
});

test("a list of words reads as an operator writes it; other lists and objects as JSON", () => {
  assert.equal(compactValue(["rw", "nosuid"]), "rw,nosuid");
  assert.equal(compactValue([]), "(none)");
  // A word holding a comma, a blank or a quote would read as two or as another: JSON says which.
  for (const list of [["a,b", "c"], ["a b"], ['"'], [1, 2], [["x"]]])
    assert.equal(compactValue(list), JSON.stringify(list));
  assert.equal(compactValue({ a: ["x"] }), '{"a":["x"]}');
});

test("a rule added at runtime reads where it is, not the rule again, in every format that shows live values", async () => {
  const rule = "tcp dport 8080 accept";
  const report = loadFleetReport();
  const web = report.nodes.find((n) => n.name === "web-01")!;
  web.drift = [
    {
      ...web.drift[0]!,
      domain: "firewall",
      key: `inet filter input: ${rule}`,
      declared: null,
      live: rule,
      path: ["networking", "firewall", "inet filter", "chains", "input", "rules", 2],
    },
  ];
  delete web.drift[0]!.detail;
  delete web.drift[0]!.diff;
  const render = await renderers();
  const say = (format: FormatName) => render[format](report, plain);
  assert.match(
    say("text"),
    /^ {2}\[\w+\] firewall inet filter input: tcp dport 8080 accept: declared not in networking\.firewall, live in the running ruleset$/m,
  );
  assert.match(say("markdown"), /\| `not in networking\.firewall` \| `in the running ruleset`/);
  assert.match(
    say("github"),
    /is declared not in networking\.firewall but live in the running ruleset/,
  );
  assert.match(say("junit"), /live: in the running ruleset/);
});
