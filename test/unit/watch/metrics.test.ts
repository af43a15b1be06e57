import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { UsageError } from "../../../src/errors.js";
import type { DriftItem } from "../../../src/report/schema.js";
import {
  health,
  parseListenAddress,
  renderWatchMetrics,
  type WatchStatus,
} from "../../../src/watch/metrics.js";
import { parseExposition, sampleValue } from "../../support/prometheus.js";

const drift = (
  domain: DriftItem["domain"],
  severity: DriftItem["severity"],
  acknowledged?: boolean,
): DriftItem => ({
  domain,
  key: "k",
  declared: 1,
  live: 2,
  severity,
  fingerprint: "0123456789abcdef",
  source: { file: "f", line: 1 },
  remediation: "",
  onDrift: "accept",
  path: [],
  ...(acknowledged ? { acknowledged } : {}),
});

const status = (overrides: Partial<WatchStatus> = {}): WatchStatus => ({
  node: 'we"b\\01',
  drift: [],
  watcherErrors: 0,
  ...overrides,
});

describe("the watcher's /metrics", () => {
  it("is valid exposition text: drift by node, domain and severity, timestamps, errors counter, paused gauge", () => {
    const text = renderWatchMetrics(
      status({
        drift: [
          drift("files", "high"),
          drift("files", "high"),
          drift("sysctl", "medium"),
          drift("files", "high", true),
        ],
        lastCheckAt: 1_700_000_000_000,
        lastCheckDurationMs: 42,
        watcherErrors: 3,
        paused: "maintenance marker /run/quartermaster/maintenance is present",
      }),
    );
    const families = parseExposition(text);
    const node = 'we"b\\01';
    assert.equal(
      sampleValue(families, "quartermaster_watch_drift_items", {
        node,
        domain: "files",
        severity: "high",
      }),
      2,
    );
    assert.equal(
      sampleValue(families, "quartermaster_watch_drift_items", {
        node,
        domain: "sysctl",
        severity: "medium",
      }),
      1,
    );
    assert.equal(
      sampleValue(families, "quartermaster_watch_last_check_timestamp_seconds", { node }),
      1_700_000_000,
    );
    assert.equal(
      sampleValue(families, "quartermaster_watch_check_duration_seconds", { node }),
      0.042,
    );
    assert.equal(sampleValue(families, "quartermaster_watch_watcher_errors_total", { node }), 3);
    assert.equal(sampleValue(families, "quartermaster_watch_paused", { node }), 1);
    assert.equal(sampleValue(families, "quartermaster_watch_manifest_valid", { node }), 1);
    assert.equal(
      families.find((f) => f.name === "quartermaster_watch_watcher_errors_total")?.type,
      "counter",
    );
  });

  it("before the first check: zeros, still valid", () => {
    const families = parseExposition(renderWatchMetrics(status()));
    assert.equal(
      sampleValue(families, "quartermaster_watch_last_check_timestamp_seconds", {
        node: 'we"b\\01',
      }),
      0,
    );
    assert.deepEqual(
      families.find((f) => f.name === "quartermaster_watch_drift_items")?.samples,
      [],
    );
  });
});

describe("/healthz", () => {
  it("is 200 with no drift (acknowledged drift included) and while paused", () => {
    assert.equal(health(status()).code, 200);
    assert.equal(health(status({ drift: [drift("files", "high", true)] })).code, 200);
    assert.equal(health(status({ paused: "maintenance" })).code, 200);
  });

  it("is 503 with drift, an invalid manifest, or a failed check, and says why", () => {
    assert.deepEqual(health(status({ drift: [drift("files", "high")] })), {
      code: 503,
      body: "1 drift item\n",
    });
    assert.equal(health(status({ manifestError: "nodes/x.yaml:1:1: bad" })).code, 503);
    assert.match(health(status({ checkError: "probe timed out" })).body, /probe timed out/);
  });
});

describe("--metrics-listen", () => {
  it("takes HOST:PORT, [IPv6]:PORT or :PORT", () => {
    assert.deepEqual(parseListenAddress("127.0.0.1:9877"), { host: "127.0.0.1", port: 9877 });
    assert.deepEqual(parseListenAddress("[::1]:9877"), { host: "::1", port: 9877 });
    assert.deepEqual(parseListenAddress(":9877"), { port: 9877 });
    for (const bad of ["9877", "host:", "host:99999", "::1:9877"])
      assert.throws(() => parseListenAddress(bad), UsageError, bad);
  });
});
