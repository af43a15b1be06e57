// Measures `propose` at fleet scale:
//  1. planning for 1,000 drifted nodes (target: under 1 s);
//  2. opening PRs on a manifest repository of 1,000 node files, through the real CLI against a
//     real git server and the GitHub double (target: under 3 s per PR), with its peak RSS;
//  3. the baseline, in the same run: the same PRs made by an isomorphic-git clone, then a commit
//     and a push per PR, then the same pull request calls.
// GitHub's own spacing of writes (1 s, 3 s for PR creation) is left out of both: it is the same
// for any client, and is set to 0 through QUARTERMASTER_WRITE_SPACING_MS.
// Usage: npx tsx bench/propose.ts [prs=20] [baseline-prs=5]
import fs from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import git from "isomorphic-git";
import http from "isomorphic-git/http/node";
import type { Finding } from "../src/domains/domain.js";
import { domainByName } from "../src/domains/registry.js";
import { toDriftItems } from "../src/drift/drift.js";
import { BOT_AUTHOR, DEFAULT_MAX_BLOB_BYTES, GitHub } from "../src/forge/github.js";
import { loadFleet, type Fleet } from "../src/manifest/load.js";
import { plan } from "../src/propose/plan.js";
import { Report, type NodeResult } from "../src/report/schema.js";
import { summarize } from "../src/report/tally.js";
import { startGitServer } from "../test/support/git-server.js";
import { startGitHubDouble } from "../test/support/github-double/index.js";
import { writeTree } from "../test/support/tree.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const TOKEN = "ghs_bench";
const NODES = 1000;

/** The same manifest tree for both measurements: a web group and 1,000 node files. */
function tree(): Record<string, string> {
  const files: Record<string, string> = {
    "fleet-manifests/fleet.yaml":
      "# Fleet-wide defaults.\nsystem:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 1\n",
    "fleet-manifests/groups/web.yaml":
      "system:\n  sysctl_parameters:\n    net.core.somaxconn: 4096   # tuned for nginx\nnetworking:\n  listening_ports: [tcp/22, tcp/443]\n",
  };
  for (let i = 0; i < NODES; i++) {
    files[`fleet-manifests/nodes/web-${String(i).padStart(4, "0")}.yaml`] =
      `# node ${i}\nhost: web-${i}.example.net\ngroups: [web]\nsystem:\n  sysctl_parameters:\n    vm.swappiness: 10\n`;
  }
  return files;
}

const sysctl = (key: string, declared: string, live: string): Finding => ({
  key,
  declared,
  live,
  path: ["system", "sysctl_parameters", key],
});

/**
 * A report whose first `drifted` nodes carry drift: one change shared by all, one of their own, an
 * unauthorized listener.
 */
function report(fleet: Fleet, drifted: number, shared = true): Report {
  const ctx = { policy: {}, waivers: [], tickets: [], now: new Date() };
  const nodes: NodeResult[] = fleet.nodes.map((node, i) => {
    if (i >= drifted)
      return { name: node.name, host: node.host, status: "clean", durationMs: 1, drift: [] };
    const drift = [
      ...toDriftItems(
        node,
        domainByName("sysctl")!,
        [sysctl("vm.swappiness", "10", String(20 + i))],
        ctx,
      ),
      ...(shared
        ? toDriftItems(
            node,
            domainByName("sysctl")!,
            [sysctl("net.core.somaxconn", "4096", "8192")],
            ctx,
          )
        : []),
      ...(shared
        ? toDriftItems(
            node,
            domainByName("ports")!,
            [
              {
                key: "tcp/8080",
                declared: "closed",
                live: "listening",
                path: ["networking", "listening_ports"],
              },
            ],
            ctx,
          )
        : []),
    ];
    return { name: node.name, host: node.host, status: "drift", durationMs: 1, drift };
  });
  const at = new Date().toISOString();
  return Report.parse({
    schemaVersion: 1,
    startedAt: at,
    finishedAt: at,
    manifestRevision: null,
    nodes,
    summary: summarize(nodes),
  });
}

async function timed(command: string, args: string[], env: Record<string, string>) {
  const { stderr, stdout, exitCode } = await execa(
    "/usr/bin/time",
    ["-f", "QM_TIME %e %M", command, ...args],
    { env, reject: false, cwd: ROOT },
  );
  const m = /QM_TIME ([\d.]+) (\d+)/.exec(stderr);
  if (exitCode !== 0 || !m)
    throw new Error(`${args.join(" ")} failed (${exitCode}): ${stderr}\n${stdout}`);
  return { seconds: Number(m[1]), rssMb: Number(m[2]) / 1024, stdout };
}

/**
 * The baseline, run as its own process so its peak RSS is its own: clone once, then commit and push
 * per PR.
 */
async function baseline(url: string, apiUrl: string, count: number): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), "qm-bench-clone-"));
  const onAuth = () => ({ username: "x-access-token", password: TOKEN });
  const github = new GitHub({
    apiUrl,
    owner: "acme",
    repo: "fleet",
    token: TOKEN,
    author: BOT_AUTHOR,
    retryAfterBaseValue: 1,
    maxBlobBytes: DEFAULT_MAX_BLOB_BYTES,
    writeSpacingMs: 0,
  });
  const t0 = performance.now();
  await git.clone({ fs, http, dir, url, onAuth, singleBranch: true, depth: 1 });
  const main = await git.resolveRef({ fs, dir, ref: "HEAD" });
  const cloned = performance.now();
  for (let i = 0; i < count; i++) {
    const branch = `baseline--${i}`;
    const file = `fleet-manifests/nodes/web-${String(NODES - 1 - i).padStart(4, "0")}.yaml`;
    await git.checkout({ fs, dir, ref: main, force: true });
    await git.branch({ fs, dir, ref: branch, object: main, checkout: true, force: true });
    const text = await readFile(path.join(dir, file), "utf8");
    await writeFile(
      path.join(dir, file),
      text.replace("vm.swappiness: 10", `vm.swappiness: ${50 + i}`),
    );
    await git.add({ fs, dir, filepath: file });
    await git.commit({ fs, dir, message: `baseline ${i}`, author: BOT_AUTHOR });
    await git.push({ fs, http, dir, url, onAuth, ref: branch });
    const number = await github.openPull({
      branch,
      base: "main",
      title: `baseline ${i}`,
      body: "baseline",
    });
    await github.addLabels(number, ["quartermaster"]);
  }
  const done = performance.now();
  process.stdout.write(
    `QM_BASELINE ${((cloned - t0) / 1000).toFixed(2)} ${((done - cloned) / 1000 / count).toFixed(2)}\n`,
  );
  await rm(dir, { recursive: true, force: true });
}

if (process.argv[2] === "--baseline") {
  await baseline(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
  process.exit(0);
}

const prs = Number(process.argv[2] ?? 20);
const baselinePrs = Number(process.argv[3] ?? 5);
const files = tree();
const dir = await writeTree(files);
const work = await mkdtemp(path.join(tmpdir(), "qm-bench-propose-"));
try {
  // 1. Planning.
  const t0 = performance.now();
  const fleet = await loadFleet(path.join(dir, "fleet-manifests"), {
    displayPrefix: "fleet-manifests",
  });
  const loaded = performance.now();
  const big = report(fleet, NODES);
  const texts = new Map(Object.entries(files));
  const times: number[] = [];
  let actions = 0;
  for (let run = 0; run < 3; run++) {
    const start = performance.now();
    actions = plan({
      report: big,
      nodes: fleet.nodes,
      tickets: [],
      files: texts,
      manifestsPath: "fleet-manifests",
      pulls: [],
    }).length;
    times.push(performance.now() - start);
  }
  const best = Math.min(...times) / 1000;
  console.log(
    `planning: ${NODES} drifted nodes, ${big.summary.driftItems} drift items -> ${actions} actions`,
  );
  console.log(
    `  plan(): ${best.toFixed(3)} s best of 3 (target < 1 s: ${best < 1 ? "met" : "MISSED"}); loading the 1,000-file tree: ${((loaded - t0) / 1000).toFixed(2)} s`,
  );

  // 2. Opening PRs through the real CLI, against a real git server and the GitHub double.
  const server = await startGitServer({ token: TOKEN });
  await server.createRepo("acme", "fleet", dir);
  const double = await startGitHubDouble({
    git: server,
    owner: "acme",
    repo: "fleet",
    token: TOKEN,
    botLogin: "quartermaster[bot]",
  });
  try {
    const reportFile = path.join(work, "report.json");
    await writeFile(reportFile, JSON.stringify(report(fleet, prs, false)));
    const env = {
      ...process.env,
      GITHUB_TOKEN: TOKEN,
      GITHUB_API_URL: double.apiUrl,
      GITHUB_REPOSITORY: "acme/fleet",
      // The token goes only to the forge's own host: the git server is it here.
      GITHUB_SERVER_URL: server.url,
      // An installation token does not say who it is: the login it acts as is given, as in Actions.
      QUARTERMASTER_BOT_LOGIN: "quartermaster[bot]",
      QUARTERMASTER_WRITE_SPACING_MS: "0",
      NO_COLOR: "1",
    } as Record<string, string>;
    const cli = [
      "--import",
      "tsx",
      path.join(ROOT, "src/cli/main.ts"),
      "propose",
      "--report",
      reportFile,
      "--repo",
      server.repoUrl("acme", "fleet"),
      "--cache-dir",
      path.join(work, "cache"),
      // Every PR in the first run: the second is then the same run again, with nothing to open.
      "--max-new-prs",
      String(prs),
    ];
    const first = await timed(process.execPath, cli, env);
    const opened = double.pulls().length;
    const writes = double.writes().length;
    const again = await timed(process.execPath, cli, env);
    console.log(`opening PRs on a ${NODES}-node manifest repository (real CLI, clone included):`);
    console.log(
      `  ${opened} PRs in ${first.seconds.toFixed(2)} s: ${(first.seconds / opened).toFixed(2)} s per PR (target < 3 s: ${first.seconds / opened < 3 ? "met" : "MISSED"}), peak RSS ${first.rssMb.toFixed(0)} MB, ${writes} write requests`,
    );
    console.log(
      `  the same run again: ${again.seconds.toFixed(2)} s, ${double.writes().length - writes} write requests, peak RSS ${again.rssMb.toFixed(0)} MB`,
    );
    console.log(
      `  past that fixed cost (start, pull, plan): ${((first.seconds - again.seconds) / opened).toFixed(2)} s per PR`,
    );

    // 3. Baseline: isomorphic-git clone + commit + push per PR.
    const base = await timed(
      process.execPath,
      [
        "--import",
        "tsx",
        fileURLToPath(import.meta.url),
        "--baseline",
        server.repoUrl("acme", "fleet"),
        double.apiUrl,
        String(baselinePrs),
      ],
      env,
    );
    const [, cloneS, perPr] = /QM_BASELINE ([\d.]+) ([\d.]+)/.exec(base.stdout)!;
    console.log(
      `baseline, isomorphic-git clone (depth 1) then commit + push per PR, ${baselinePrs} PRs:`,
    );
    console.log(
      `  clone ${cloneS} s, then ${perPr} s per PR; whole process ${base.seconds.toFixed(2)} s, peak RSS ${base.rssMb.toFixed(0)} MB`,
    );
  } finally {
    await double.stop();
    await server.stop();
  }
} finally {
  await rm(dir, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
}
