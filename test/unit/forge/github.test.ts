// The forge's failures as ForgeError with the HTTP status as a field; a 404 where "none" is an
// answer.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { ForgeError } from "../../../src/errors.js";
import {
  BOT_AUTHOR,
  DEFAULT_MAX_BLOB_BYTES,
  GitHub,
  settingsFromEnv,
} from "../../../src/forge/github.js";

/**
 * A client of repository o/r on a local server answering each request with `answer`'s status and
 * JSON body: started before the suite's tests, stopped after them.
 */
function clientAnswering(answer: (request: IncomingMessage) => [number, unknown]): {
  github: GitHub;
} {
  const client = {} as { github: GitHub };
  const server = createServer((request, response) => {
    const [status, body] = answer(request);
    response.writeHead(status, { "content-type": "application/json" });
    response.end(JSON.stringify(body));
  });
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    client.github = new GitHub({
      apiUrl: `http://127.0.0.1:${port}`,
      owner: "o",
      repo: "r",
      token: "t",
      author: BOT_AUTHOR,
      retryAfterBaseValue: 1,
      maxBlobBytes: DEFAULT_MAX_BLOB_BYTES,
    });
  });
  after(() => new Promise((resolve) => server.close(resolve)));
  return client;
}

describe("github: errors by type", () => {
  const client = clientAnswering((request) =>
    request.url!.startsWith("/repos/o/r/git/ref")
      ? [404, { message: "Not Found" }]
      : [403, { message: "Resource not accessible by integration" }],
  );

  it("a branch the forge does not have is none, not a failure", async () => {
    assert.equal(await client.github.branchHead("quartermaster--x"), undefined);
  });

  it("a refusal is a ForgeError naming the request, with GitHub's words and the status", async () => {
    await assert.rejects(client.github.defaultBranch(), (error: unknown) => {
      assert.ok(error instanceof ForgeError);
      assert.equal(error.status, 403);
      assert.equal(
        error.message,
        "GitHub API: reading the repository failed (HTTP 403): Resource not accessible by integration",
      );
      return true;
    });
  });

  it("an App's or Actions' token, which GET /user refuses, is a ForgeError saying to set QUARTERMASTER_BOT_LOGIN", async () => {
    await assert.rejects(client.github.botLogin(), {
      name: "ForgeError",
      message:
        /^GitHub API: reading the token's user failed \(HTTP 403\): Resource not accessible by integration; .*set QUARTERMASTER_BOT_LOGIN/,
    });
    const given = new GitHub({ ...client.github.settings, botLogin: "fleet-app[bot]" });
    assert.equal(await given.botLogin(), "fleet-app[bot]");
  });

  it("QUARTERMASTER_BOT_LOGIN must be a GitHub login", () => {
    const env = { GITHUB_TOKEN: "t", GITHUB_REPOSITORY: "o/r" };
    assert.equal(
      settingsFromEnv({ ...env, QUARTERMASTER_BOT_LOGIN: "fleet-app[bot]" }).botLogin,
      "fleet-app[bot]",
    );
    assert.throws(() => settingsFromEnv({ ...env, QUARTERMASTER_BOT_LOGIN: "evil\n::error::x" }), {
      name: "ForgeError",
      message: /^QUARTERMASTER_BOT_LOGIN must be a GitHub login .*, not "evil\\n::error::x"$/,
    });
  });

  it("missing settings are a ForgeError saying what to set", () => {
    assert.throws(() => settingsFromEnv({ GITHUB_TOKEN: "t" }), {
      name: "ForgeError",
      message: "GITHUB_REPOSITORY must be set to owner/repo",
    });
  });
});

describe("github: creating a branch another run deletes meanwhile", () => {
  let creates = 0;
  // The branch exists when the first create is refused and is gone when it is read (its holder
  // deleted it in between): the second create succeeds.
  const client = clientAnswering((request) => {
    const create = request.method === "POST" && request.url === "/repos/o/r/git/refs";
    if (create) creates++;
    return !create
      ? [404, { message: "Not Found" }]
      : creates === 1
        ? [422, { message: "Reference already exists" }]
        : [201, { ref: "refs/heads/lock", object: { sha: "a".repeat(40) } }];
  });

  it("is created: the refusal met a branch that is no longer there", async () => {
    assert.equal(await client.github.createBranch("lock", "a".repeat(40)), true);
    assert.equal(creates, 2);
  });
});
