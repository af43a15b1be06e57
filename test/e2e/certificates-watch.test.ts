// `quartermaster watch --local` over declared certificates, as a real process against the real
// file system: a certificate renewed or replaced (by rename, as tools deploy one) is checked at
// once, on the file event, though the poll is an hour away. Waits are for events, never for
// durations.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { stringify } from "yaml";
import type { Event } from "../../src/report/events.js";
import { ensureBuilt } from "../support/cli.js";
import { removeTree, writeTree } from "../support/tree.js";
import { Watcher } from "../support/watcher.js";

describe("certificates: watch", () => {
  let root: string;
  let watcher: Watcher | undefined;
  before(async () => {
    await ensureBuilt();
    root = await writeTree({ "tls/web.pem": "" }, "qm-certs-watch-");
  });
  after(async () => {
    await watcher?.stop();
    await removeTree(root);
  });

  /** A self-signed certificate openssl makes now, valid for `days`. */
  const certificate = (days: number) =>
    execFileSync(
      "openssl",
      [
        ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
        ...["-keyout", "/dev/null", "-days", String(days), "-subj", "/CN=web.example.net"],
      ],
      { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
    );

  it("a certificate renewed in a declared folder is resolved at once, and drift again when replaced", async () => {
    const folder = path.join(root, "tls");
    const file = path.join(folder, "web.pem");
    const soon = certificate(10);
    await writeFile(file, soon);
    const spec = path.join(root, "node-spec.yaml");
    await writeFile(spec, stringify({ certificates: [{ path: folder, valid_for: "30d" }] }));
    watcher = Watcher.start([
      ...["--manifest", spec, "--maintenance-marker", path.join(root, "maintenance")],
      ...["--interval", "3600"],
    ]);
    const about = (kind: "drift" | "resolved") => (e: Event) => e.event === kind && e.key === file;
    // The first check finds it; what follows only a file event can announce.
    await watcher.waitFor("a drift event from the first check", about("drift"));
    const replace = async (pem: string) => {
      await writeFile(`${file}.new`, pem);
      await rename(`${file}.new`, file);
    };
    await replace(certificate(100));
    await watcher.waitFor("a resolved event for the renewed certificate", about("resolved"));
    const mark = watcher.events.length;
    await replace(soon);
    const drift = await watcher.waitFor("a drift event again", about("drift"), mark);
    assert.match(drift.event === "drift" ? String(drift.live) : "", /^expires on /);
    assert.equal(watcher.count(about("drift")), 2, watcher.stderr);
    assert.equal((await watcher.stop()).code, 0, watcher.stderr);
    watcher = undefined;
  });
});
