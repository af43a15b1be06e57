import { test } from "node:test";
import assert from "node:assert/strict";
import { Progress } from "../../../src/cli/progress.js";
import type { NodeResult } from "../../../src/report/schema.js";

test("the progress line never calls an unreachable node audited", () => {
  let written = "";
  const stream = {
    isTTY: false,
    write: (text: string) => (written += text),
  } as unknown as NodeJS.WriteStream;
  const progress = new Progress(3, stream);
  const node = (status: NodeResult["status"]): NodeResult => ({
    name: "n",
    host: "n",
    status,
    durationMs: 1,
    drift: [],
  });
  for (const status of ["unreachable", "error", "drift"] as const) progress.update(node(status));
  progress.finish();
  assert.match(written, /^3\/3 nodes finished, 1 drifted, 2 not audited, [\d.]+s\n$/);
});
