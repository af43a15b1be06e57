// src/crypto.ts: node:crypto on first use, random bytes from the kernel before it. Run in a Node of
// its own without tsx (which loads node:crypto itself), the module transpiled as the build would.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { transform } from "esbuild";
import { REPO_ROOT } from "../support/cli.js";

const CHECK = `import { createHash, randomBytes } from "./crypto.mjs";
const loaded = () => process.moduleLoadList.includes("NativeModule crypto");
const before = [randomBytes(12), randomBytes(12), randomBytes(0), randomBytes(70000)];
const beforeLoaded = loaded();
const digest = createHash("sha256").update("a").digest("hex");
const after = randomBytes(12);
console.log(JSON.stringify({
  sizes: [...before, after].map((b) => b.length),
  differ: before[0].toString("hex") !== before[1].toString("hex"),
  spread: new Set(before[3]).size,
  beforeLoaded,
  afterLoaded: loaded(),
  digest,
}));
`;

test("random bytes come from the kernel without loading node:crypto, then from node:crypto", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "qm-crypto-"));
  try {
    const source = await readFile(path.join(REPO_ROOT, "src", "crypto.ts"), "utf8");
    const { code } = await transform(source, { loader: "ts", format: "esm" });
    await writeFile(path.join(dir, "crypto.mjs"), code);
    await writeFile(path.join(dir, "check.mjs"), CHECK);
    const out = execFileSync(process.execPath, [path.join(dir, "check.mjs")], { encoding: "utf8" });
    assert.deepEqual(JSON.parse(out), {
      sizes: [12, 12, 0, 70000, 12],
      differ: true,
      // 70,000 bytes of a random source hold every byte value.
      spread: 256,
      beforeLoaded: false,
      afterLoaded: true,
      digest: "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
