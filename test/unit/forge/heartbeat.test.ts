import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { heartbeatTarget, isHeartbeatUrl, pingHeartbeat } from "../../../src/forge/heartbeat.js";
import { runCli } from "../../support/cli.js";

test("a heartbeat server gets the ping, /fail after a failing run", async () => {
  const paths: string[] = [];
  const server = createServer((request, response) => {
    paths.push(request.url ?? "");
    response.end("OK");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ping/abc`;
  try {
    await pingHeartbeat(url, false);
    await pingHeartbeat(`${url}/`, true);
    assert.deepEqual(paths, ["/ping/abc", "/ping/abc/fail"]);
  } finally {
    server.close();
  }
  assert.equal(heartbeatTarget("https://hc-ping.com/x", true), "https://hc-ping.com/x/fail");
  assert.equal(isHeartbeatUrl("file:///etc/passwd"), false);
});

test("propose --dry-run pings nothing; a bad --heartbeat-url is a usage error", async () => {
  const paths: string[] = [];
  const server = createServer((request, response) => {
    paths.push(request.url ?? "");
    response.end("OK");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ping`;
  try {
    const dry = await runCli([
      "propose",
      "--dry-run",
      "--report",
      "test/fixtures/reports/fleet.json",
      "--manifests",
      "test/fixtures/reports",
      "--heartbeat-url",
      url,
    ]);
    assert.notEqual(dry.exitCode, -1);
    assert.deepEqual(paths, [], dry.stderr);
  } finally {
    server.close();
  }
  const bad = await runCli(["propose", "--report", "x.json", "--heartbeat-url", "ftp://x"]);
  assert.equal(bad.exitCode, 2);
  assert.match(bad.stderr, /--heartbeat-url takes an http/);
});

test("a heartbeat URL's user and password go as Basic authorization, and no message prints the URL", async () => {
  const seen: { url: string; authorization: string | undefined }[] = [];
  const server = createServer((request, response) => {
    seen.push({ url: request.url ?? "", authorization: request.headers.authorization });
    response.statusCode = 503;
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  // A run that fails (no such report) still pings, /fail.
  const propose = (url: string) =>
    runCli(["propose", "--report", "qm-none.json", "--heartbeat-url", url]);
  try {
    const answered = await propose(`http://qm-user:TOKEN-s3cr3t@127.0.0.1:${port}/ping/ID-8f2e`);
    assert.deepEqual(seen, [
      {
        url: "/ping/ID-8f2e/fail",
        authorization: `Basic ${Buffer.from("qm-user:TOKEN-s3cr3t").toString("base64")}`,
      },
    ]);
    assert.match(answered.stderr, /--heartbeat-url http:\/\/127\.0\.0\.1:\d+\/… answered 503/);
    // Nothing listens on the port once the server is closed.
    await new Promise((resolve) => server.close(resolve));
    const unreachable = await propose(`http://qm-user:TOKEN-s3cr3t@127.0.0.1:${port}/ping/ID-8f2e`);
    assert.match(unreachable.stderr, /--heartbeat-url http:\/\/127\.0\.0\.1:\d+\/… unreachable \(/);
    for (const { stderr, stdout } of [answered, unreachable])
      assert.doesNotMatch(stderr + stdout, /TOKEN-s3cr3t|qm-user|ID-8f2e/);
  } finally {
    server.close();
  }
});
