import assert from "node:assert/strict";
import { describe, it, mock } from "node:test";
import { Debouncer } from "../../../src/watch/debounce.js";

describe("debouncing bursts of file events", () => {
  it("a burst with no pause is handed over once, with every key it touched", () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const flushed: string[][] = [];
      const debouncer = new Debouncer<string>(200, 2000, (keys) => flushed.push([...keys].sort()));
      for (let i = 0; i < 1000; i++) debouncer.add([i % 2 ? "files" : "systemd"]);
      assert.deepEqual(flushed, []);
      mock.timers.tick(200);
      assert.deepEqual(flushed, [["files", "systemd"]]);
      mock.timers.tick(5000);
      assert.equal(flushed.length, 1);
    } finally {
      mock.timers.reset();
    }
  });

  it("a writer that never pauses is still handed over at the maximum wait", () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const flushed: string[][] = [];
      const debouncer = new Debouncer<string>(200, 2000, (keys) => flushed.push([...keys]));
      for (let t = 0; t < 2000; t += 100) {
        debouncer.add(["files"]);
        mock.timers.tick(100);
      }
      assert.deepEqual(flushed, [["files"]]);
    } finally {
      mock.timers.reset();
    }
  });

  it("clear() drops what was pending", () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const flushed: string[][] = [];
      const debouncer = new Debouncer<string>(200, 2000, (keys) => flushed.push([...keys]));
      debouncer.add(["files"]);
      debouncer.clear();
      mock.timers.tick(5000);
      assert.deepEqual(flushed, []);
    } finally {
      mock.timers.reset();
    }
  });
});
