// Where the CLI keeps compiled code between runs: the user's cache folder, never on a node's own
// `--local` run unless the environment asks.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { compileCacheDir } from "../../../src/cli/compile-cache.js";

describe("the compile cache folder", () => {
  const home = "/home/auditor";
  it("is the user's cache folder, in a workflow too: a self-hosted runner empties RUNNER_TEMP at each job", () => {
    assert.equal(
      compileCacheDir(["audit"], { RUNNER_TEMP: "/runner/_temp" }, home),
      "/home/auditor/.cache/quartermaster/compile-cache",
    );
    assert.equal(
      compileCacheDir(["audit"], { XDG_CACHE_HOME: "/var/cache/me" }, home),
      "/var/cache/me/quartermaster/compile-cache",
    );
    assert.equal(
      compileCacheDir(["propose"], {}, home),
      "/home/auditor/.cache/quartermaster/compile-cache",
    );
  });

  it("is none on a --local run, and none of the CLI's own when NODE_COMPILE_CACHE or NODE_DISABLE_COMPILE_CACHE says", () => {
    for (const argv of [
      ["audit", "--local"],
      ["watch", "--local"],
      ["snapshot", "--local"],
    ])
      assert.equal(compileCacheDir(argv, { RUNNER_TEMP: "/runner/_temp" }, home), undefined);
    assert.equal(compileCacheDir(["audit"], { NODE_COMPILE_CACHE: "/x" }, home), undefined);
    assert.equal(compileCacheDir(["audit"], { NODE_DISABLE_COMPILE_CACHE: "1" }, home), undefined);
  });
});
