// `quartermaster watch --local` as a real process against the real file system, and for
// sysctl against a real network namespace. Waits are for events, never for durations.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { chmod, mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { stringify } from "yaml";
import type { Event } from "../../src/report/events.js";
import { MAX_WAIT_MS } from "../../src/watch/monitor.js";
import { ensureBuilt } from "../support/cli.js";
import { parseExposition, sampleValue } from "../support/prometheus.js";
import { removeTree, writeTree } from "../support/tree.js";
import { Watcher } from "../support/watcher.js";

const CONTENTS = "hello world\n";
const dirs: string[] = [];
const watchers: Watcher[] = [];
before(ensureBuilt);
after(async () => {
  await Promise.all(watchers.map((w) => w.stop()));
  await Promise.all(dirs.map(removeTree));
});

/**
 * A temp dir holding `etc/app/app.conf` as declared, a node-spec file declaring it, and a marker
 * path.
 */
async function scene(extraSpec: Record<string, unknown> = {}) {
  const root = await writeTree({ "etc/app/app.conf": CONTENTS }, "qm-watch-");
  dirs.push(root);
  const file = path.join(root, "etc/app/app.conf");
  await chmod(file, 0o644);
  const spec = path.join(root, "node-spec.yaml");
  const declare = (contents: string) =>
    writeFile(spec, stringify({ files: [{ path: file, contents, mode: "0644" }], ...extraSpec }));
  await declare(CONTENTS);
  return { root, file, spec, declare, marker: path.join(root, "run/maintenance") };
}

function start(args: string[], prefix?: string[]): Watcher {
  const watcher = Watcher.start(args, prefix);
  watchers.push(watcher);
  return watcher;
}

const driftOf = (key: string) => (e: Event) => e.event === "drift" && e.key === key;
const resolvedOf = (key: string) => (e: Event) => e.event === "resolved" && e.key === key;

/** Change, expect one drift event; restore, expect one resolved event for the same fingerprint. */
async function driftsOnceAndResolves(
  watcher: Watcher,
  key: string,
  change: () => Promise<unknown>,
  restore: () => Promise<unknown>,
) {
  await watcher.waitFor("the started event", (e) => e.event === "started");
  await change();
  const drift = await watcher.waitFor(`a drift event for ${key}`, driftOf(key));
  await restore();
  const resolved = await watcher.waitFor(`a resolved event for ${key}`, resolvedOf(key));
  assert.equal(
    resolved.event === "resolved" && resolved.fingerprint,
    drift.event === "drift" && drift.fingerprint,
  );
  const exit = await watcher.stop();
  assert.equal(exit.code, 0, watcher.stderr);
  assert.equal(watcher.count(driftOf(key)), 1, `one drift event for ${key}:\n${watcher.stderr}`);
  assert.equal(watcher.count(resolvedOf(key)), 1, `one resolved event for ${key}`);
  return drift;
}

async function scrape(
  address: string,
  pathname: string,
): Promise<{ status: number; text: string }> {
  const response = await fetch(`http://${address}${pathname}`);
  return { status: response.status, text: await response.text() };
}

describe("watch --local on the real file system", () => {
  it("a write to a declared file: one drift event with a -want +got diff on stderr, one resolved when restored", async () => {
    const s = await scene();
    const watcher = start(["--manifest", s.spec, "--maintenance-marker", s.marker]);
    const drift = await driftsOnceAndResolves(
      watcher,
      s.file,
      () => writeFile(s.file, "not-the-data\n"),
      () => writeFile(s.file, CONTENTS),
    );
    assert.equal(drift.event === "drift" && drift.live, "not-the-data\n");
    assert.match(watcher.stderr, /-hello world\n\+not-the-data/);
  });

  it("a write of terminal escapes, CR, NUL and bidi controls: stderr shows them escaped, the event keeps them exact", async () => {
    const s = await scene();
    const watcher = start(["--manifest", s.spec, "--maintenance-marker", s.marker]);
    const hostile = "\x1b]0;retitled\x07\x1b[2J\rnul\0 \u202eevil\u2028\n::error::forged\n";
    const drift = await driftsOnceAndResolves(
      watcher,
      s.file,
      () => writeFile(s.file, hostile),
      () => writeFile(s.file, CONTENTS),
    );
    assert.equal(drift.event === "drift" && drift.live, hostile);
    assert.doesNotMatch(
      watcher.stderr,
      /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e\u2028]/u,
      JSON.stringify(watcher.stderr),
    );
    assert.doesNotMatch(watcher.stderr, /^\s*::/m);
    assert.match(
      watcher.stderr,
      /\+\\x1b\]0;retitled\\x07\\x1b\[2J\\rnul\\x00 \\u\{202e\}evil\\u\{2028\}/,
    );
  });

  it("a file replaced by rename, as editors save: one drift event, one resolved", async () => {
    const s = await scene();
    const watcher = start(["--manifest", s.spec, "--maintenance-marker", s.marker]);
    const replace = async (contents: string) => {
      const temporary = `${s.file}.swp`;
      await writeFile(temporary, contents, { mode: 0o644 });
      await chmod(temporary, 0o644);
      await rename(temporary, s.file);
    };
    await driftsOnceAndResolves(
      watcher,
      s.file,
      () => replace("edited\n"),
      () => replace(CONTENTS),
    );
  });

  it("a mode change: one drift event on the mode, one resolved", async () => {
    const s = await scene();
    const watcher = start(["--manifest", s.spec, "--maintenance-marker", s.marker]);
    const drift = await driftsOnceAndResolves(
      watcher,
      `${s.file}:mode`,
      () => chmod(s.file, 0o600),
      () => chmod(s.file, 0o644),
    );
    assert.equal(drift.event === "drift" && drift.live, "0600");
  });

  it("the parent directory deleted and recreated: drift, resolved, and the re-armed watch still sees writes", async () => {
    const s = await scene();
    const parent = path.dirname(s.file);
    const watcher = start(["--manifest", s.spec, "--maintenance-marker", s.marker]);
    await watcher.waitFor("the started event", (e) => e.event === "started");
    await rm(parent, { recursive: true });
    await watcher.waitFor("drift for the missing file", driftOf(s.file));
    await mkdir(parent, { recursive: true });
    await writeFile(s.file, CONTENTS, { mode: 0o644 });
    await chmod(s.file, 0o644);
    await watcher.waitFor("resolved after the directory came back", resolvedOf(s.file));
    // The watch now sits on the new directory, not the deleted one.
    const mark = watcher.events.length;
    await writeFile(s.file, "after recreation\n");
    await watcher.waitFor("drift in the recreated directory", driftOf(s.file), mark);
    await writeFile(s.file, CONTENTS);
    await watcher.waitFor("resolved in the recreated directory", resolvedOf(s.file), mark);
    assert.equal((await watcher.stop()).code, 0);
    assert.equal(
      watcher.count(driftOf(s.file)),
      2,
      "one drift for the deletion, one for the later write",
    );
    assert.equal(watcher.count(resolvedOf(s.file)), 2);
  });

  it("a burst of 2,000 writes: one drift event and, once restored, one resolved", async () => {
    const s = await scene();
    const watcher = start(["--manifest", s.spec, "--maintenance-marker", s.marker]);
    await driftsOnceAndResolves(
      watcher,
      s.file,
      async () => {
        for (let i = 0; i < 2000; i++) await writeFile(s.file, "burst\n");
      },
      () => writeFile(s.file, CONTENTS),
    );
  });
});

describe("watch --local, maintenance", () => {
  it("reports nothing while the fleet's maintenance marker exists, then the drift made meanwhile once it is gone", async () => {
    const s = await scene();
    const fleet = await writeTree(
      {
        "fleet.yaml": stringify({ audit: { maintenance_marker: s.marker } }),
        "nodes/localhost.yaml": stringify({
          files: [{ path: s.file, contents: CONTENTS, mode: "0644" }],
        }),
      },
      "qm-watch-fleet-",
    );
    dirs.push(fleet);
    const watcher = start(["--manifests", fleet, "--nodes", "localhost", "--interval", "1"]);
    await watcher.waitFor("the started event", (e) => e.event === "started");
    await mkdir(path.dirname(s.marker), { recursive: true });
    await writeFile(s.marker, "");
    await watcher.waitFor(
      "the maintenance pause",
      (e) => e.event === "stopped" && e.reason.startsWith("maintenance"),
    );
    await writeFile(s.file, "changed during maintenance\n");
    // Longer than any debounce: a running watcher would have reported by now.
    await sleep(MAX_WAIT_MS + 1000);
    assert.equal(
      watcher.count((e) => e.event === "drift"),
      0,
      "nothing reported during maintenance",
    );
    const mark = watcher.events.length;
    await rm(s.marker);
    await watcher.waitFor("resuming", (e) => e.event === "started", mark);
    await watcher.waitFor("the drift made during maintenance", driftOf(s.file), mark);
    assert.equal((await watcher.stop()).code, 0);
    assert.equal(watcher.count(driftOf(s.file)), 1);
    assert.match(watcher.stderr, /paused: maintenance marker .* is present/);
  });
});

describe("watch --local, metrics and health", () => {
  it("serves valid exposition text, and /healthz flips to 503 with drift and back to 200", async () => {
    const s = await scene();
    const watcher = start([
      "--manifest",
      s.spec,
      "--maintenance-marker",
      s.marker,
      "--metrics-listen",
      "127.0.0.1:0",
      "--nodes",
      "web-01",
    ]);
    const address = await watcher.metricsAddress();
    await watcher.waitFor("the started event", (e) => e.event === "started");
    await writeFile(s.file, "drifted\n");
    await watcher.waitFor("drift", driftOf(s.file));
    const unhealthy = await scrape(address, "/healthz");
    assert.equal(unhealthy.status, 503, unhealthy.text);
    const metrics = parseExposition((await scrape(address, "/metrics")).text);
    assert.equal(
      sampleValue(metrics, "quartermaster_watch_drift_items", {
        node: "web-01",
        domain: "files",
        severity: "high",
      }),
      1,
    );
    assert.equal(sampleValue(metrics, "quartermaster_watch_paused", { node: "web-01" }), 0);
    assert.equal(
      sampleValue(metrics, "quartermaster_watch_watcher_errors_total", { node: "web-01" }),
      0,
    );
    assert.ok(
      sampleValue(metrics, "quartermaster_watch_last_check_timestamp_seconds", {
        node: "web-01",
      })! > 0,
    );
    assert.ok(
      sampleValue(metrics, "quartermaster_watch_check_duration_seconds", { node: "web-01" })! > 0,
    );
    assert.equal(
      metrics.find((f) => f.name === "quartermaster_watch_watcher_errors_total")?.type,
      "counter",
    );

    await writeFile(s.file, CONTENTS);
    await watcher.waitFor("resolved", resolvedOf(s.file));
    const healthy = await scrape(address, "/healthz");
    assert.equal(healthy.status, 200, healthy.text);
    const clean = parseExposition((await scrape(address, "/metrics")).text);
    assert.equal(
      sampleValue(clean, "quartermaster_watch_drift_items", {
        node: "web-01",
        domain: "files",
        severity: "high",
      }),
      undefined,
    );
    assert.equal((await scrape(address, "/nowhere")).status, 404);
    assert.equal((await watcher.stop()).code, 0);
  });
});

describe("watch --local, the manifest", () => {
  it("an invalid manifest on SIGHUP: reported as an error, the last good one stays in force", async () => {
    const s = await scene();
    const watcher = start([
      "--manifest",
      s.spec,
      "--maintenance-marker",
      s.marker,
      "--metrics-listen",
      "127.0.0.1:0",
    ]);
    const address = await watcher.metricsAddress();
    await watcher.waitFor("the started event", (e) => e.event === "started");
    await writeFile(s.spec, "files: [ { path: relative/path, mode: 644 } ]\n");
    watcher.signal("SIGHUP");
    const error = await watcher.waitFor("the manifest error", (e) => e.event === "node_error");
    assert.match(error.event === "node_error" ? error.error : "", /manifest invalid/);
    const metrics = parseExposition((await scrape(address, "/metrics")).text);
    assert.equal(
      sampleValue(metrics, "quartermaster_watch_manifest_valid", { node: error.node }),
      0,
    );
    assert.equal((await scrape(address, "/healthz")).status, 503);
    // Still watching against the last good manifest.
    await writeFile(s.file, "changed\n");
    await watcher.waitFor("drift against the last good manifest", driftOf(s.file));
    assert.equal(
      watcher.count((e) => e.event === "started"),
      1,
      "no reload happened",
    );
    assert.equal((await watcher.stop()).code, 0);
  });

  it("SIGHUP reloads a changed manifest: the new declaration is checked at once", async () => {
    const s = await scene();
    const watcher = start(["--manifest", s.spec, "--maintenance-marker", s.marker]);
    await watcher.waitFor("the started event", (e) => e.event === "started");
    await s.declare("goodbye\n");
    watcher.signal("SIGHUP");
    const drift = await watcher.waitFor("drift against the reloaded manifest", driftOf(s.file));
    assert.equal(drift.event === "drift" && drift.declared, "goodbye\n");
    assert.equal(
      watcher.count((e) => e.event === "started"),
      2,
    );
    await s.declare(CONTENTS);
    watcher.signal("SIGHUP");
    await watcher.waitFor("resolved by accepting the live file", resolvedOf(s.file));
    assert.equal((await watcher.stop()).code, 0);
  });

  it("SIGTERM and SIGINT stop cleanly: a stopped event, exit 0", async () => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      const s = await scene();
      const watcher = start(["--manifest", s.spec, "--maintenance-marker", s.marker]);
      await watcher.waitFor("the started event", (e) => e.event === "started");
      watcher.signal(signal);
      const exit = await watcher.exit();
      assert.deepEqual(exit, { code: 0, signal: null }, watcher.stderr);
      const last = watcher.events.at(-1);
      assert.equal(last?.event, "stopped");
      assert.equal(last?.event === "stopped" && last.reason, `received ${signal}`);
    }
  });
});

describe("watch --local, sysctl in a network namespace", () => {
  const namespace = `qm-watch-${process.pid}`;
  const inNamespace = ["ip", "netns", "exec", namespace];
  const root = process.getuid?.() === 0;
  before(() => {
    if (root) execFileSync("ip", ["netns", "add", namespace]);
  });
  after(() => {
    if (root) execFileSync("ip", ["netns", "delete", namespace]);
  });

  it(
    "a sysctl changed inside the namespace is found by the poll, and resolved when set back",
    { skip: !root && "needs root for ip netns" },
    async () => {
      const s = await scene({ system: { sysctl_parameters: { "net.ipv4.ip_forward": 0 } } });
      const watcher = start(
        ["--manifest", s.spec, "--maintenance-marker", s.marker, "--interval", "1"],
        inNamespace,
      );
      const set = (value: string) =>
        execFileSync("ip", [
          "netns",
          "exec",
          namespace,
          "sh",
          "-c",
          `echo ${value} > /proc/sys/net/ipv4/ip_forward`,
        ]);
      const drift = await driftsOnceAndResolves(
        watcher,
        "net.ipv4.ip_forward",
        async () => set("1"),
        async () => set("0"),
      );
      assert.equal(drift.event === "drift" && drift.live, "1");
      assert.equal(drift.event === "drift" && drift.domain, "sysctl");
    },
  );

  it(
    "its own metrics listener is never an unauthorized port; another listener is",
    { skip: !root && "needs root for ip netns" },
    async () => {
      execFileSync("ip", ["netns", "exec", namespace, "ip", "link", "set", "lo", "up"]);
      const other = spawn("ip", [
        "netns",
        "exec",
        namespace,
        process.execPath,
        "-e",
        'require("net").createServer().listen(8081, "127.0.0.1")',
      ]);
      try {
        const s = await scene({ networking: { listening_ports: [] } });
        const watcher = start(
          [
            "--manifest",
            s.spec,
            "--maintenance-marker",
            s.marker,
            "--metrics-listen",
            "127.0.0.1:0",
            "--interval",
            "1",
          ],
          inNamespace,
        );
        const own = (await watcher.metricsAddress()).split(":")[1]!;
        // The check that reports the other listener has looked at every listener, the watcher's own
        // included.
        await watcher.waitFor("the other listener reported", driftOf("tcp/8081"));
        assert.equal(watcher.count(driftOf(`tcp/${own}`)), 0, watcher.stderr);
        assert.equal(
          watcher.count((e) => e.event === "drift" && e.domain === "ports"),
          1,
        );
        assert.equal((await watcher.stop()).code, 0);
      } finally {
        other.kill();
      }
    },
  );
});
