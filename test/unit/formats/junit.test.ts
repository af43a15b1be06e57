import { test } from "node:test";
import assert from "node:assert/strict";
import { FORMATS } from "../../../src/report/formats/index.js";
import { escapeAttribute, escapeText, renderJunit } from "../../../src/report/formats/junit.js";
import { findAll, parseXml, XmlError, type XmlElement } from "../../support/xml.js";
import { loadFleetReport } from "../../support/reports.js";

const options = { color: false, verbose: false };
const parse = () => parseXml(renderJunit(loadFleetReport(), options));

function suite(root: XmlElement, node: string): XmlElement {
  const found = root.children.find((s) => s.attributes.name === node);
  assert.ok(found, `no testsuite for ${node}`);
  return found;
}

function testcase(s: XmlElement, name: string): XmlElement {
  const found = s.children.find((c) => c.attributes.name === name);
  assert.ok(found, `no testcase ${name} in ${s.attributes.name}`);
  return found;
}

test("junit is registered as a format", async () => {
  assert.equal((await FORMATS.junit()).render, renderJunit);
});

test("the output is well-formed XML with one testsuite per node", () => {
  const root = parse();
  assert.equal(root.name, "testsuites");
  assert.deepEqual(
    root.children.map((s) => [s.name, s.attributes.name, s.attributes.hostname]),
    loadFleetReport().nodes.map((n) => ["testsuite", n.name, n.host]),
  );
});

test("counts on every suite and on the whole run match the testcases", () => {
  const root = parse();
  for (const s of [root, ...root.children]) {
    const cases = findAll(s, "testcase");
    const withChild = (name: string) =>
      String(cases.filter((c) => c.children.some((o) => o.name === name)).length);
    assert.equal(s.attributes.tests, String(cases.length), s.attributes.name);
    assert.equal(s.attributes.failures, withChild("failure"), s.attributes.name);
    assert.equal(s.attributes.errors, withChild("error"), s.attributes.name);
    assert.equal(s.attributes.skipped, withChild("skipped"), s.attributes.name);
  }
  assert.deepEqual(
    [
      root.attributes.tests,
      root.attributes.failures,
      root.attributes.errors,
      root.attributes.skipped,
    ],
    ["23", "11", "2", "4"],
  );
});

test("each unacknowledged drift item is a failure with declared, live, detail, source and diff", () => {
  const web = suite(parse(), "web-01");
  const somaxconn = testcase(web, "sysctl net.core.somaxconn");
  assert.equal(somaxconn.attributes.classname, "web-01.sysctl");
  const failure = somaxconn.children[0]!;
  assert.equal(failure.name, "failure");
  assert.equal(failure.attributes.message, "declared 4096, live 1024");
  assert.equal(failure.attributes.type, "drift.high");
  assert.ok(
    failure.text.startsWith(
      "declared: 4096\nlive: 1024\npersisted value in /etc/sysctl.d/99-tuning.conf is also 1024\ndeclared at fleet-manifests/groups/web.yaml:12\n",
    ),
  );
  const nginx = testcase(web, "files /etc/nginx/nginx.conf").children[0]!;
  assert.ok(
    nginx.text.endsWith(
      "\n-worker_processes auto;\n+worker_processes 2;\n events {\n     worker_connections 768;",
    ),
  );
  assert.equal(testcase(web, "routes default").children[0]!.attributes.type, "drift.critical");
});

test("acknowledged drift is skipped with who acknowledged it", () => {
  const kernel = testcase(suite(parse(), "db-01"), "kernel kernel_version").children[0]!;
  assert.equal(kernel.name, "skipped");
  assert.equal(
    kernel.attributes.message,
    "acknowledged by remediations/db-01-kernel-2b3c4d5e.yaml: declared 6.1.0-28-amd64, live 6.1.0-26-amd64",
  );
});

test("unreachable and failed nodes are errors with their message; multi-line messages keep their lines", () => {
  const root = parse();
  const unreachable = testcase(suite(root, "db-02"), "audit").children[0]!;
  assert.equal(unreachable.name, "error");
  assert.equal(unreachable.attributes.type, "unreachable");
  assert.equal(
    unreachable.attributes.message,
    "ssh: connect to host db-02.example.net port 22: Connection timed out",
  );
  const failed = testcase(suite(root, "worker-01"), "audit").children[0]!;
  assert.equal(failed.attributes.type, "error");
  assert.equal(
    failed.text,
    "host key verification failed for worker-01.example.net\nthe host key changed since it was recorded in known_hosts",
  );
});

test("maintenance nodes and unknown domains are skipped; clean nodes pass", () => {
  const root = parse();
  const maintenance = testcase(suite(root, "worker-02"), "audit").children[0]!;
  assert.equal(maintenance.name, "skipped");
  assert.match(maintenance.attributes.message!, /maintenance marker/);
  const unknown = testcase(suite(root, "web-02"), "kernel_modules").children[0]!;
  assert.equal(unknown.name, "skipped");
  assert.equal(
    unknown.attributes.message,
    "unknown: no /proc/modules: kernel built without loadable module support",
  );
  assert.deepEqual(testcase(suite(root, "web-03"), "audit").children, []);
});

test("host text with markup, quotes, newlines and control characters survives as text", () => {
  const report = loadFleetReport();
  const item = report.nodes[0]!.drift[0]!;
  item.detail = 'a <b> & "c" ]]> \u0000\u0008\u000b\u001f tab\there \ud800 end';
  item.key = 'pkg\nwith"newline';
  const root = parseXml(renderJunit(report, options));
  const c = testcase(suite(root, "db-01"), 'packages pkg\nwith"newline');
  assert.ok(
    c.children[0]!.text.includes('a <b> & "c" ]]> \\x00\\x08\\x0b\\x1f tab\there \ufffd end'),
  );
});

test("escaping: markup and characters XML 1.0 forbids", () => {
  assert.equal(escapeText("a<b>&c\r"), "a&lt;b&gt;&amp;c&#13;");
  assert.equal(escapeAttribute('x"\n\ty'), "x&quot;&#10;&#9;y");
  assert.equal(escapeText("\u001b[0m\ufffe"), "\\x1b[0m\\ufffe");
  assert.equal(escapeText("ok \u{1f600}"), "ok \u{1f600}", "astral characters are legal");
});

test("the XML checker rejects what is not well-formed", () => {
  const bad = [
    "<a>",
    "<a></b>",
    "<a x=1/>",
    '<a x="1" x="2"/>',
    "<a>&nbsp;</a>",
    "<a>&#1;</a>",
    "<a>\u0001</a>",
    "<a>x & y</a>",
    '<a x="<"/>',
    "<a/><b/>",
    "text<a/>",
    "<a>]]></a>",
    "<a><!-- a -- b --></a>",
    '<a/><?xml version="1.0"?>',
  ];
  for (const xml of bad) assert.throws(() => parseXml(xml), XmlError, JSON.stringify(xml));
  assert.equal(
    parseXml('<?xml version="1.0" encoding="UTF-8"?>\n<a k=\'v&#10;\'>t<![CDATA[<x>]]></a>\n').text,
    "t<x>",
  );
});

test("a domain unknown for two reasons is one test case naming both: names stay unique within a suite", () => {
  const report = loadFleetReport();
  const node = report.nodes.find((n) => n.name === "web-02")!;
  node.unknown = [
    { domain: "systemd", reason: "cannot read /etc/systemd/system/a.service.d/x.conf" },
    { domain: "systemd", reason: "systemd is not running" },
  ];
  const web = suite(parseXml(renderJunit(report, options)), "web-02");
  const names = findAll(web, "testcase").map((c) => c.attributes.name);
  assert.equal(names.length, new Set(names).size, names.join(", "));
  assert.equal(
    testcase(web, "systemd").children[0]!.attributes.message,
    "unknown: cannot read /etc/systemd/system/a.service.d/x.conf; systemd is not running",
  );
});
