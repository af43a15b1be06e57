import { test } from "node:test";
import assert from "node:assert/strict";
import { ExpositionError, parseExposition } from "../../support/prometheus.js";

test("parses families, labels, escapes, special values and timestamps", () => {
  const families = parseExposition(
    [
      "# A plain comment",
      "# HELP http_requests_total Requests served.\\nSecond line with a \\\\ backslash.",
      "# TYPE http_requests_total counter",
      'http_requests_total{method="post",code="200",} 1027 1395066363000',
      'http_requests_total{ method = "get" , path="C:\\\\dir \\"x\\"\\n" } 3',
      "",
      "# TYPE rpc_duration_seconds summary",
      'rpc_duration_seconds{quantile="0.5"} 4.773e+03',
      "rpc_duration_seconds_sum 1.7560473e+07",
      "rpc_duration_seconds_count 2693",
      "# TYPE latency histogram",
      'latency_bucket{le="+Inf"} 3',
      "latency_sum 0.5",
      "latency_count 3",
      "temperature NaN",
      "floor -Inf",
      "ceiling +Inf",
      "",
    ].join("\n"),
  );
  const byName = new Map(families.map((f) => [f.name, f]));
  const requests = byName.get("http_requests_total")!;
  assert.equal(requests.type, "counter");
  assert.equal(requests.help, "Requests served.\nSecond line with a \\ backslash.");
  assert.deepEqual(requests.samples[0], {
    name: "http_requests_total",
    labels: { method: "post", code: "200" },
    value: 1027,
    timestamp: 1395066363000,
  });
  assert.deepEqual(requests.samples[1]!.labels, { method: "get", path: 'C:\\dir "x"\n' });
  assert.equal(byName.get("rpc_duration_seconds")!.samples.length, 3);
  assert.equal(byName.get("latency")!.samples.length, 3);
  assert.ok(Number.isNaN(byName.get("temperature")!.samples[0]!.value));
  assert.equal(byName.get("temperature")!.type, "untyped");
  assert.equal(byName.get("floor")!.samples[0]!.value, -Infinity);
  assert.equal(byName.get("ceiling")!.samples[0]!.value, Infinity);
});

const malformed: [string, string][] = [
  ["no final newline", "up 1"],
  ["bad metric name", "9lives 1\n"],
  ["bad label name", 'up{9x="a"} 1\n'],
  ["reserved label name", 'up{__name__="a"} 1\n'],
  ["duplicate label", 'up{a="1",a="2"} 1\n'],
  ["unquoted label value", "up{a=1} 1\n"],
  ["unterminated label value", 'up{a="1} 1\n'],
  ["invalid escape", 'up{a="\\t"} 1\n'],
  ["raw quote breaks the value", 'up{a="say "hi""} 1\n'],
  ["missing value", "up\n"],
  ["non-numeric value", "up one\n"],
  ["fractional timestamp", "up 1 12.5\n"],
  ["trailing junk", "up 1 2 3\n"],
  ["unknown type", "# TYPE up gauges\nup 1\n"],
  ["second HELP", "# HELP up a\n# HELP up b\nup 1\n"],
  ["second TYPE", "# TYPE up gauge\n# TYPE up gauge\nup 1\n"],
  ["TYPE after samples", "up 1\n# TYPE up gauge\n"],
  ["family split in two groups", "up 1\ndown 1\n# HELP up again\n"],
  ["samples split in two groups", 'up{a="1"} 1\ndown 1\nup{a="2"} 1\n'],
  ["duplicate series", 'up{a="1",b="2"} 1\nup{b="2",a="1"} 0\n'],
  ["histogram sample without a suffix", "# TYPE h histogram\nh 1\n"],
  ["carriage return", "up 1\r\n"],
];

for (const [what, text] of malformed) {
  test(`rejects ${what}`, () => {
    assert.throws(() => parseExposition(text), ExpositionError);
  });
}
