// An inventory's ssh arguments read as ssh reads them, with OpenSSH itself as the reference: each
// case's words are given to `ssh -G … target` by a shell (as Ansible hands them to ssh), and what
// ssh prints as `proxyjump`, or refuses, must be what readSshArgs found.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { execa } from "execa";
import { proxyJumpValue, readSshArgs, shellWords } from "../../../src/adopt/inventory/ssh-args.js";

/** What ssh makes of `args`: its proxyjump (null for none), or undefined when it refuses them. */
async function sshReads(args: string): Promise<string | null | undefined> {
  const run = await execa("sh", ["-c", `exec ssh -F /dev/null -G ${args} target`], {
    reject: false,
    stdin: "ignore",
  });
  if (run.exitCode !== 0) return undefined;
  return /^proxyjump (.*)$/m.exec(run.stdout)?.[1] ?? null;
}

/** ssh prints the first hop it parsed (the last one listed) as `[user@]host[:port]`, the rest as given. */
const asDeclared = (printed: string) =>
  printed
    .split(",")
    .map((jump) => (proxyJumpValue(jump) as { jump: string }).jump)
    .join(",");

const CASES: { args: string; jump?: string; refused?: RegExp; rest?: boolean }[] = [
  { args: "-J bastion.example.net", jump: "bastion.example.net" },
  { args: "-o ProxyJump=ops@bastion:2200", jump: "ops@bastion:2200" },
  { args: "-oProxyJump=b -o Compression=yes", jump: "b", rest: true },
  { args: "-o 'proxyjump = b'", jump: "b" },
  { args: '-o ProxyJump="b"', jump: "b" },
  { args: "-vJ b", jump: "b", rest: true },
  { args: "-Jb", jump: "b" },
  { args: "-J a,u@b:2222,c", jump: "a,u@b:2222,c" },
  { args: "-J ssh://u@h:22", jump: "u@h:22" },
  { args: "-J ssh://u@h/", jump: "u@h" },
  { args: "-J u@h:22,ssh://b:2", jump: "u@h:22,b:2" },
  { args: "-J '[::1]:22'", jump: "[::1]:22" },
  // A -J inside another option's value is that value: ssh uses the ProxyCommand, no jump.
  { args: `-o ProxyCommand="ssh -J evil@x nc %h %p"`, rest: true },
  { args: "-i -J -o ProxyJump=b", jump: "b", rest: true },
  { args: "-l app -p 2222", rest: true },
  // The first obtained wins.
  { args: "-J a -o ProxyJump=b", jump: "a" },
  { args: "-o ProxyJump=b -o ProxyCommand='nc %h %p'", jump: "b", rest: true },
  { args: "-o ProxyCommand='nc %h %p' -o ProxyJump=b", rest: true },
  { args: "-J none -o ProxyJump=b" },
  // What ssh refuses.
  { args: "-J a -J b", refused: /a second jump host option/ },
  { args: "-o ProxyJump=a -J b", refused: /a second jump host option/ },
  { args: "-o ProxyCommand=x -J b", refused: /-J with a ProxyCommand/ },
  { args: "-J h:99999", refused: /has no port 1-65535/ },
  { args: "-J h:0", refused: /has no port 1-65535/ },
  { args: "-J a,,b", refused: /an empty jump host/ },
  { args: "-J @h", refused: /is no \[user@\]host\[:port\]/ },
  { args: "-J u@", refused: /names no host/ },
  { args: "-J h:22:33", refused: /is no \[user@\]host\[:port\]/ },
  { args: "-J ssh://u@h:2222/path", refused: /is no \[user@\]host\[:port\]/ },
  { args: "-J 'ssh://[::1]:22'", refused: /is no \[user@\]host\[:port\]/ },
  { args: "-J -oProxyCommand=x", refused: /manifest takes only/ },
  { args: "-J 'x;id'", refused: /manifest takes only/ },
  { args: "-J", refused: /-J without its argument/ },
  { args: "-Z", refused: /an option ssh does not know: -Z/ },
];

describe("ssh arguments read as ssh reads them", () => {
  for (const c of CASES)
    it(`${c.args}: ${c.refused ? "refused" : (c.jump ?? "no jump")}`, async () => {
      const read = readSshArgs(c.args);
      const ssh = await sshReads(c.args);
      if (c.refused) {
        assert.match(read.problem ?? "", c.refused);
        if (!/manifest takes only/.test(c.refused.source))
          assert.equal(ssh, undefined, "ssh refuses them too");
        return;
      }
      assert.equal(read.problem, undefined);
      assert.equal(read.jump, c.jump);
      assert.equal(read.rest, c.rest ?? false);
      assert.ok(ssh !== undefined, "ssh takes them");
      assert.equal(ssh === null ? undefined : asDeclared(ssh), c.jump, "ssh's proxyjump");
    });

  it("a jump ssh takes but the manifest cannot hold is refused, saying so", async () => {
    assert.equal(await sshReads("-J a@b@c"), "a@b@c");
    assert.match(readSshArgs("-J a@b@c").problem ?? "", /manifest takes only/);
  });

  it("words split as a shell splits them; an unterminated quote is refused", () => {
    assert.deepEqual(shellWords(` -o 'a b'"c\\"d" e\\ f  `), ["-o", 'a bc"d', "e f"]);
    assert.equal(shellWords("-o 'ProxyJump=b"), undefined);
    assert.match(readSshArgs('-o "ProxyJump=b').problem ?? "", /unterminated quote/);
  });
});
