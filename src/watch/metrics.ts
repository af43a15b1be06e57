// The watcher's scrape endpoint: Prometheus text for the monitor's own state, and a health
// check a load balancer or systemd-style probe can read as "this node matches its manifest".
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { UsageError } from "../errors.js";
import type { DriftItem } from "../report/schema.js";
import { exposition, type Labels, type MetricFamily } from "../text/prometheus.js";

export interface WatchStatus {
  node: string;
  /** Drift reported and not yet resolved. */
  drift: readonly DriftItem[];
  /** Milliseconds since the epoch; undefined before the first check finished. */
  lastCheckAt?: number;
  lastCheckDurationMs?: number;
  /** Why the last check could not audit the node. */
  checkError?: string;
  /** Why checks are paused (maintenance). */
  paused?: string;
  /** The last manifest reload failed; the watcher still checks against the last good one. */
  manifestError?: string;
  watcherErrors: number;
}

export function renderWatchMetrics(status: WatchStatus): string {
  const drift = new Map<string, { labels: Labels; value: number }>();
  for (const item of status.drift) {
    if (item.acknowledged) continue;
    const labels = { node: status.node, domain: item.domain, severity: item.severity };
    const key = JSON.stringify(labels);
    drift.set(key, { labels, value: (drift.get(key)?.value ?? 0) + 1 });
  }
  const one = (value: number) => [{ labels: { node: status.node }, value }];
  const families: MetricFamily[] = [
    {
      name: "check_duration_seconds",
      type: "gauge",
      help: "How long the last check took.",
      samples: one((status.lastCheckDurationMs ?? 0) / 1000),
    },
    {
      name: "check_failed",
      type: "gauge",
      help: "1 when the last check could not audit the node.",
      samples: one(status.checkError ? 1 : 0),
    },
    {
      name: "drift_items",
      type: "gauge",
      help: "Unacknowledged drift items present now, by node, domain and severity.",
      samples: [...drift.values()],
    },
    {
      name: "last_check_timestamp_seconds",
      type: "gauge",
      help: "When the last check finished, in seconds since the Unix epoch (0 before the first).",
      samples: one((status.lastCheckAt ?? 0) / 1000),
    },
    {
      name: "manifest_valid",
      type: "gauge",
      help: "0 when the last manifest reload failed and the last good manifest is in use.",
      samples: one(status.manifestError ? 0 : 1),
    },
    {
      name: "paused",
      type: "gauge",
      help: "1 while checks are paused for maintenance.",
      samples: one(status.paused ? 1 : 0),
    },
    {
      name: "watcher_errors_total",
      type: "counter",
      help: "File-system watch errors since start (each is retried).",
      samples: one(status.watcherErrors),
    },
  ];
  return exposition(families.map((f) => ({ ...f, name: `quartermaster_watch_${f.name}` })));
}

/** 200 while the node matches its manifest; 503 with the reason otherwise. */
export function health(status: WatchStatus): { code: number; body: string } {
  const drifted = status.drift.filter((d) => !d.acknowledged).length;
  if (status.manifestError)
    return { code: 503, body: `manifest invalid: ${status.manifestError}\n` };
  if (status.checkError) return { code: 503, body: `check failed: ${status.checkError}\n` };
  if (drifted) return { code: 503, body: `${drifted} drift item${drifted === 1 ? "" : "s"}\n` };
  return { code: 200, body: status.paused ? `ok (paused: ${status.paused})\n` : "ok\n" };
}

/** `127.0.0.1:9877`, `[::1]:9877` or `:9877` (every address). */
export function parseListenAddress(text: string): { host?: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  const port = Number(m?.[3]);
  if (!m || port > 65535)
    throw new UsageError(`--metrics-listen takes HOST:PORT (like 127.0.0.1:9877), not "${text}"`);
  const host = m[1] ?? m[2];
  return host ? { host, port } : { port };
}

/** Serves /metrics and /healthz from `status()`; resolves once listening. */
export async function serveMetrics(
  address: string,
  status: () => WatchStatus,
): Promise<{ server: Server; address: AddressInfo }> {
  const { host, port } = parseListenAddress(address);
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
    } else if (url.pathname === "/metrics") {
      res
        .writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" })
        .end(renderWatchMetrics(status()));
    } else if (url.pathname === "/healthz") {
      const { code, body } = health(status());
      res.writeHead(code, { "content-type": "text/plain; charset=utf-8" }).end(body);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return { server, address: server.address() as AddressInfo };
}
