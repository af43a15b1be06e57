import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { parse } from "yaml";
import { appendToFile } from "../../../src/runs/adopt-extend.js";

// A second adopt appends what it adds to files people wrote: every byte they hold stays.

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "qm-adopt-extend-"));
});
after(() => rm(dir, { recursive: true, force: true }));

const unit = { name: "b.service", enabled: true };
const file = { path: "/etc/b.conf", contents: "b = 1\n" };

async function appended(text: string, added: Record<string, unknown>): Promise<string> {
  const rel = "node.yaml";
  await writeFile(path.join(dir, rel), text);
  await appendToFile(dir, rel, added);
  return readFile(path.join(dir, rel), "utf8");
}

test("a list the file has takes the items after its last one; comments, quotes and the keys after it stay as they were", async () => {
  const text = [
    "# kept: a comment at the top",
    "systemd:",
    "  units:",
    "    - name: a.service   # why a is here",
    "      enabled: 'yes-not-a-bool'",
    "    # a comment below the list",
    "packages: { installed_manifest: { curl: '*' } }",
    "",
  ].join("\n");
  const out = await appended(text, { systemd: { units: [unit] }, files: [file] });
  const cut = out.indexOf("    - name: b.service");
  assert.ok(cut > 0, out);
  // The original text with one run inserted after the list, and one appended at the end.
  assert.equal(out.slice(0, cut), text.slice(0, cut));
  assert.deepEqual(parse(out), {
    systemd: { units: [{ name: "a.service", enabled: "yes-not-a-bool" }, unit] },
    packages: { installed_manifest: { curl: "*" } },
    files: [file],
  });
  const rest = out.slice(cut);
  assert.ok(
    rest.includes(
      "    # a comment below the list\npackages: { installed_manifest: { curl: '*' } }\n",
    ),
    out,
  );
});

test("a map the file has without the list takes the list's key after its own keys", async () => {
  const text = "groups: [web]\nsystemd:\n  other: true\nhost: web-01.example.net\n";
  const out = await appended(text, { systemd: { units: [unit] } });
  assert.equal(
    out,
    "groups: [web]\nsystemd:\n  other: true\n  units:\n    - name: b.service\n      enabled: true\nhost: web-01.example.net\n",
  );
});

test("a file without a final newline, and one with only comments", async () => {
  assert.equal(
    await appended("files:\n  - path: /etc/a\n    contents: a", { files: [file] }),
    "files:\n  - path: /etc/a\n    contents: a\n  - path: /etc/b.conf\n    contents: |\n      b = 1\n",
  );
  assert.equal(
    await appended("# only a comment\n", { files: [file] }),
    "# only a comment\nfiles:\n  - path: /etc/b.conf\n    contents: |\n      b = 1\n",
  );
});
