import assert from "node:assert/strict";
import { test } from "node:test";
import { parse } from "yaml";
import { snapshotText } from "../../../src/runs/snapshot.js";
import { pathKey } from "../../../src/spec-path.js";
import { pyyamlLoad } from "../../support/pyyaml.js";

test("an unknown reason holding CR, NEL or a line separator stays one comment line for every YAML reader", async () => {
  const spec = { system: { kernel_version: "6.1.0" } };
  const unknown = [
    "kernel_modules: no /proc/modules\rhost: evil",
    "systemd: not running\u0085ssh: { user: root }",
    "files: \u2028groups: [x]\u202e",
  ];
  const text = snapshotText(
    "web-01",
    { spec, unknown, latent: new Map() },
    new Date("2026-11-30T00:00:00Z"),
  );
  assert.doesNotMatch(text, /[\r\u0085\u2028\u202e]/u);
  assert.equal(
    text.split("\n").filter((l) => l.startsWith("# not shown by this host: ")).length,
    3,
  );
  assert.deepEqual(parse(text), spec);
  const [py] = await pyyamlLoad([text]);
  assert.deepEqual(py, { value: spec });
});

test("a value the next boot changes carries its latent finding as a comment beside it, host text escaped to one line", async () => {
  const spec = {
    system: { sysctl_parameters: { "fs.protected_fifos": "0", "vm.swappiness": "60" } },
  };
  const because = "/usr/lib/sysctl.d/99-protect-links.conf:7";
  const hostile = "/etc/sysctl.d/x\nhost: evil\u2028::error::y.conf:1";
  const latent = new Map([
    [
      pathKey(["system", "sysctl_parameters", "fs.protected_fifos"]),
      { after: "reboot" as const, becomes: "1", because },
    ],
    [
      pathKey(["system", "sysctl_parameters", "vm.swappiness"]),
      { after: "reboot" as const, becomes: "10", because: hostile },
    ],
  ]);
  const text = snapshotText(
    "web-01",
    { spec, unknown: [], latent },
    new Date("2026-11-30T00:00:00Z"),
  );
  const lines = text.split("\n");
  assert.ok(
    lines.includes(`    fs.protected_fifos: "0" # will become 1 at reboot: ${because}`),
    text,
  );
  const swappiness = lines.find((l) => l.includes("vm.swappiness"))!;
  assert.match(
    swappiness,
    /^ {4}vm\.swappiness: "60" # will become 10 at reboot: \/etc\/sysctl\.d\/x/,
  );
  assert.doesNotMatch(text, /[\u2028]|^host:/mu);
  assert.deepEqual(parse(text), spec);
  const [py] = await pyyamlLoad([text]);
  assert.deepEqual(py, { value: spec });
});
