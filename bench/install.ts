// Installing Quartermaster, in the same run: the release tarball (`npm install -g --offline` from
// the tarball alone, an empty prefix and an empty npm cache) against what a job did before
// releases, `npm ci` of the repository with a warm npm cache and then `npm run build`. Prints the
// median wall time of each and their ratio.
// Usage: npx tsx bench/install.ts [runs=3]
import { cp, mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { REPO_ROOT } from "../test/support/cli.js";
import { installOffline, packRelease } from "../test/support/pack.js";

const runs = Number(process.argv[2] ?? 3);
const work = await mkdtemp(path.join(os.tmpdir(), "qm-bench-install-"));

async function timed(what: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await what();
  return Number(process.hrtime.bigint() - start) / 1e6;
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

try {
  const tarball = await packRelease(work);
  const tarballMs: number[] = [];
  const ciMs: number[] = [];
  const buildMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const dir = path.join(work, `run-${i}`);
    await mkdir(dir);
    tarballMs.push(
      await timed(async () => {
        const result = await installOffline(
          tarball,
          path.join(dir, "prefix"),
          path.join(dir, "cache"),
        );
        if (result.exitCode !== 0) throw new Error(result.stderr);
      }),
    );
    // A clone's files that npm ci and the build read; the user's npm cache is warm, as a job's is
    // with setup-node's npm cache.
    const clone = path.join(dir, "clone");
    for (const name of ["package.json", "package-lock.json", "tsconfig.json", "src", "scripts"])
      await cp(path.join(REPO_ROOT, name), path.join(clone, name), { recursive: true });
    ciMs.push(
      await timed(() =>
        execa("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund"], { cwd: clone }),
      ),
    );
    buildMs.push(await timed(() => execa("npm", ["run", "build", "--silent"], { cwd: clone })));
    await rm(dir, { recursive: true, force: true });
  }
  const tarballMedian = median(tarballMs);
  const sourceMedian = median(ciMs.map((ms, i) => ms + buildMs[i]!));
  console.log(`runs: ${runs} (medians)`);
  console.log(`release tarball, offline, empty cache:  ${seconds(tarballMedian)}`);
  console.log(
    `npm ci (warm cache) + npm run build:     ${seconds(sourceMedian)} (npm ci ${seconds(median(ciMs))}, build ${seconds(median(buildMs))})`,
  );
  console.log(`ratio: the tarball installs ${(sourceMedian / tarballMedian).toFixed(1)}x faster`);
} finally {
  await rm(work, { recursive: true, force: true });
}
