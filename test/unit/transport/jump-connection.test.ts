// A node's ProxyCommand through its jump hosts, the first a channel of the shared connection: read
// back as ssh reads it (its `%` tokens expanded, then the shell), every word arrives whole.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, it } from "node:test";
import { channelProxyCommand, parseJumps } from "../../../src/transport/jump-connection.js";

/** ssh's expansion of a ProxyCommand's tokens: %h, %p and %% (readconf.c, percent_expand). */
const expand = (command: string, host: string, port: number) =>
  command.replace(/%([hp%])/g, (_, token: string) =>
    token === "h" ? host : token === "p" ? String(port) : "%",
  );

/** The words the shell hands the command, as `ssh` would get them. */
const words = (command: string): string[] =>
  JSON.parse(
    execFileSync(
      "/bin/sh",
      [
        "-c",
        `ssh() { node -e 'console.log(JSON.stringify(process.argv.slice(1)))' -- "$@"; }; ${command}`,
      ],
      {
        encoding: "utf8",
      },
    ),
  ) as string[];

describe("a jump list", () => {
  it("reads user, host and port as ssh -G prints them, and refuses anything else", () => {
    assert.deepEqual(parseJumps("audit@bastion:2222,ssh://inner,[192.0.2.9]:22"), [
      { user: "audit", host: "bastion", port: 2222 },
      { host: "inner" },
      { host: "192.0.2.9", port: 22 },
    ]);
    for (const bad of ["-oProxyCommand=x", "a b", "bastion:0", "bastion:70000", "a;b", ""])
      assert.equal(parseJumps(bad), undefined, bad);
  });
});

describe("the ProxyCommand through a shared connection", () => {
  const config = "/etc/it's a %d config";
  it("one jump: a -W channel of the master at the control path", () => {
    const command = channelProxyCommand("ssh", config, "/tmp/qm-jump-x/0", [
      { user: "audit", host: "bastion", port: 2222 },
    ]);
    assert.deepEqual(words(expand(command, "10.0.0.5", 22)), [
      "-F",
      config,
      "-S",
      "/tmp/qm-jump-x/0",
      "-o",
      "ControlMaster=no",
      "-l",
      "audit",
      "-p",
      "2222",
      "-W",
      "[10.0.0.5]:22",
      "--",
      "bastion",
    ]);
  });

  it("two jumps: the second reached through the first's channel, each level's tokens its own", () => {
    const command = channelProxyCommand("ssh", config, "/tmp/qm-jump-x/0", [
      { host: "bastion" },
      { host: "inner", port: 2200 },
    ]);
    const outer = words(expand(command, "10.0.0.5", 22));
    const proxy = outer.find((word) => word.startsWith("ProxyCommand="))!;
    assert.deepEqual(
      outer.filter((word) => word !== proxy),
      ["-F", config, "-p", "2200", "-o", "-W", "[10.0.0.5]:22", "--", "inner"],
    );
    // The ssh to `inner` expands its ProxyCommand with its own host and port.
    assert.deepEqual(words(expand(proxy.slice("ProxyCommand=".length), "inner", 2200)), [
      "-F",
      config,
      "-S",
      "/tmp/qm-jump-x/0",
      "-o",
      "ControlMaster=no",
      "-W",
      "[inner]:2200",
      "--",
      "bastion",
    ]);
  });
});
