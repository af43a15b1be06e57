import assert from "node:assert/strict";
import { link, mkdir, readdir, readFile, symlink } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { test } from "node:test";
import { UsageError } from "../../../src/errors.js";
import { withIo } from "../../../src/cli/io.js";
import { writeOut, writeReportStream } from "../../../src/cli/output.js";
import { checkOut } from "../../../src/cli/output-options.js";
import { renderJson } from "../../../src/report/formats/json.js";
import { largeReport } from "../../support/reports.js";
import { scratchTrees } from "../../support/tree.js";

const tree = scratchTrees();

const usageError = (pattern: RegExp) => (error: unknown) =>
  error instanceof UsageError && pattern.test(error.message);

test("a missing directory, a directory, a symbolic link or an unwritable place is a usage error naming it", async () => {
  const dir = await tree({ "victim.txt": "keep me\n" });
  await symlink(path.join(dir, "victim.txt"), path.join(dir, "link.json"));
  await mkdir(path.join(dir, "sub"));
  await assert.rejects(
    checkOut(path.join(dir, "missing", "r.json")),
    usageError(/directory .*missing does not exist/),
  );
  await assert.rejects(
    checkOut(path.join(dir, "victim.txt", "r.json")),
    usageError(/victim\.txt is not a directory/),
  );
  await assert.rejects(checkOut(path.join(dir, "sub")), usageError(/sub is a directory/));
  await assert.rejects(
    writeOut(path.join(dir, "link.json"), "{}"),
    usageError(/link\.json is a symbolic link/),
  );
  await assert.rejects(
    checkOut("/sys/qm-report.json"),
    usageError(/cannot create a file in \/sys/),
  );
  assert.equal(await readFile(path.join(dir, "victim.txt"), "utf8"), "keep me\n");
});

test("the file is replaced by a rename: another link to the old file keeps the old text, and no temporary file is left", async () => {
  const dir = await tree({ "old.prom": "old\n" });
  const out = path.join(dir, "report.prom");
  await link(path.join(dir, "old.prom"), out);
  await writeOut(out, "new\n");
  assert.equal(await readFile(out, "utf8"), "new\n");
  assert.equal(await readFile(path.join(dir, "old.prom"), "utf8"), "old\n");
  assert.deepEqual((await readdir(dir)).sort(), ["old.prom", "report.prom"]);
});

test("a streamed report is written whole in a few large writes, not one per node, to stdout and to --out", async () => {
  const report = largeReport(4000, 3);
  const head = { ...report, nodes: [] };
  const values = { format: "json" as const, verbose: false, color: false, "no-color": false };
  const writes: string[] = [];
  const stdout = new Writable({
    write(chunk: Buffer, _encoding, done) {
      writes.push(chunk.toString());
      done();
    },
  });
  await withIo({ stdout, stderr: stdout, env: {} }, () =>
    writeReportStream(head, () => report.nodes, { ...values, out: undefined }),
  );
  const expected = renderJson(report, { color: false, verbose: false });
  assert.equal(writes.join(""), expected);
  // About 400 KB of entries: a write per 256 KB, not per node.
  assert.ok(writes.length <= 3, `${writes.length} writes`);
  const out = path.join(await tree({}), "report.json");
  await writeReportStream(head, () => report.nodes, { ...values, out });
  assert.equal(await readFile(out, "utf8"), expected);
});
