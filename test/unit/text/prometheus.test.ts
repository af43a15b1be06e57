import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { exposition } from "../../../src/text/prometheus.js";
import { parseExposition } from "../../support/prometheus.js";

describe("the Prometheus text writer", () => {
  const text = exposition([
    {
      name: "qm_values",
      type: "gauge",
      help: 'a back\\slash, a "quote" and a\nnewline',
      samples: [
        { labels: { k: "nan" }, value: NaN },
        { labels: { k: "inf" }, value: Infinity },
        { labels: { k: "-inf" }, value: -Infinity },
        { labels: { k: 'q"b\\n\nl' }, value: 0.5 },
      ],
    },
    { name: "qm_total", type: "counter", help: "plain", samples: [{ labels: {}, value: 3 }] },
  ]);

  it("escapes HELP text and label values, spells NaN and infinities, sorts series", () => {
    assert.equal(
      text,
      [
        '# HELP qm_values a back\\\\slash, a "quote" and a\\nnewline',
        "# TYPE qm_values gauge",
        'qm_values{k="-inf"} -Inf',
        'qm_values{k="inf"} +Inf',
        'qm_values{k="nan"} NaN',
        'qm_values{k="q\\"b\\\\n\\nl"} 0.5',
        "# HELP qm_total plain",
        "# TYPE qm_total counter",
        "qm_total 3",
        "",
      ].join("\n"),
    );
  });

  it("writes what a strict parser reads back as given", () => {
    const [values, total] = parseExposition(text);
    assert.equal(values?.help, 'a back\\slash, a "quote" and a\nnewline');
    assert.deepEqual(
      values?.samples.map((s) => [s.labels.k, s.value]),
      [
        ["-inf", -Infinity],
        ["inf", Infinity],
        ["nan", NaN],
        ['q"b\\n\nl', 0.5],
      ],
    );
    assert.equal(total?.type, "counter");
  });
});
