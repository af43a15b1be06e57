import assert from "node:assert/strict";
import { test } from "node:test";
import { parse } from "yaml";
import { snapshotText } from "../../../src/runs/snapshot.js";
import { pyyamlLoad } from "../../support/pyyaml.js";

test("an unknown reason holding CR, NEL or a line separator stays one comment line for every YAML reader", async () => {
  const spec = { system: { kernel_version: "6.1.0" } };
  const unknown = [
    "kernel_modules: no /proc/modules\rhost: evil",
    "systemd: not running\u0085ssh: { user: root }",
    "files: \u2028groups: [x]\u202e",
  ];
  const text = snapshotText("web-01", { spec, unknown }, new Date("2026-11-30T00:00:00Z"));
  assert.doesNotMatch(text, /[\r\u0085\u2028\u202e]/u);
  assert.equal(
    text.split("\n").filter((l) => l.startsWith("# not shown by this host: ")).length,
    3,
  );
  assert.deepEqual(parse(text), spec);
  const [py] = await pyyamlLoad([text]);
  assert.deepEqual(py, { value: spec });
});
