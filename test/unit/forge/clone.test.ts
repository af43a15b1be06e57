import assert from "node:assert/strict";
import { test } from "node:test";
import { tokenAllowed } from "../../../src/forge/clone.js";

test("the token goes to the GITHUB_SERVER_URL host over https, or over http to loopback only", () => {
  const cases: [string, string | undefined, boolean][] = [
    ["https://github.com/acme/fleet.git", undefined, true],
    ["https://GitHub.com/acme/fleet.git", "https://github.com", true],
    ["http://github.com/acme/fleet.git", undefined, false],
    ["https://evil.example/acme/fleet.git", undefined, false],
    ["https://github.com.evil.example/acme/fleet.git", undefined, false],
    ["https://x@evil.example/@github.com/fleet.git", undefined, false],
    ["https://ghe.corp.example/acme/fleet.git", "https://ghe.corp.example", true],
    ["https://ghe.corp.example:8443/acme/fleet.git", "https://ghe.corp.example", false],
    ["http://ghe.corp.example/acme/fleet.git", "http://ghe.corp.example", false],
    ["http://127.0.0.1:8080/acme/fleet.git", "http://127.0.0.1:8080", true],
    ["http://localhost:8080/acme/fleet.git", "http://localhost:8080", true],
    ["http://[::1]:8080/acme/fleet.git", "http://[::1]:8080", true],
    ["http://127.0.0.1:9999/acme/fleet.git", "http://127.0.0.1:8080", false],
    ["not a url", undefined, false],
  ];
  for (const [url, server, allowed] of cases)
    assert.equal(tokenAllowed(url, server), allowed, `${url} with server ${server}`);
});
