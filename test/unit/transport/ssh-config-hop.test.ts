// The hop settings read from plain Host blocks, against the real ssh client: for generated
// ssh_configs (HostName, Port, ProxyJump and ProxyCommand lines under wildcard and negated
// patterns, `none`, jump lists in every form ssh takes, a user file before the system's) the
// resolver's answer is exactly what `ssh -G` prints, or it asks `ssh -G`. `ssh -G` connects
// nowhere; each call costs about 10 ms, so the run count stays modest.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import fsp from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import { sshConfigHop, type HopSettings } from "../../../src/transport/ssh-config-scan.js";

const RUNS = { seed: 20261203, numRuns: 120 } as const;

/** What `ssh -G` prints for a host: its hostname, port and proxyjump lines. */
async function sshG(args: string[]): Promise<HopSettings> {
  const { stdout } = await promisify(execFile)("ssh", ["-G", ...args]);
  const printed = new Map(
    stdout
      .split("\n")
      .map((line) => [line.slice(0, line.indexOf(" ")), line.slice(line.indexOf(" ") + 1)]),
  );
  const proxyjump = printed.get("proxyjump");
  return {
    hostname: printed.get("hostname")!,
    port: Number(printed.get("port")),
    ...(proxyjump !== undefined && { proxyjump }),
  };
}

const HOSTS = ["web-01", "web-02", "web-10", "db-1", "x.example.net", "10.0.0.5", "Web-01"];
// Mostly the hosts the patterns name: a block found by a host's name must give way to the blocks
// before it whose wildcards take the host too, and to a negation in its own line.
const host = fc.oneof(
  { arbitrary: fc.constantFrom(...HOSTS), weight: 4 },
  { arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,4}$/), weight: 1 },
);
const pattern = fc.oneof(
  fc.constantFrom("*", "web-*", "web-0?", "!web-02", "db-?", "*.example.net", "!*", "10.0.0.*"),
  host.filter((h) => !/[A-Z]/.test(h)),
  host.filter((h) => !/[A-Z]/.test(h)).map((h) => `!${h}`),
);
const jumpHost = fc.constantFrom(
  "bastion",
  "Bastion",
  "b-1.example.net",
  "10.1.2.3",
  "none",
  "j_2",
);
const jump = fc
  .tuple(
    fc.constantFrom("", "ssh://"),
    fc.constantFrom("", "audit@", "u.x@"),
    jumpHost,
    fc.constantFrom("", ":22", ":2222", ":65535"),
  )
  .map((parts) => parts.join(""));
const keyword = (name: string) => fc.constantFrom(name, name.toLowerCase(), name.toUpperCase());
const setting = fc.oneof(
  fc.tuple(keyword("HostName"), fc.constantFrom("10.0.0.9", "inner.example.net", "Inner-Host")),
  fc.tuple(keyword("Port"), fc.constantFrom("22", "2200", "65535")),
  fc.tuple(
    keyword("ProxyJump"),
    fc.oneof(
      fc.constantFrom("none", "NONE"),
      fc.array(jump, { minLength: 1, maxLength: 3 }).map((j) => j.join(",")),
    ),
  ),
  fc.tuple(keyword("ProxyCommand"), fc.constantFrom("none", "nc %h %p")),
  fc.tuple(keyword("User"), fc.constantFrom("audit")),
);
const line = setting.chain(([name, value]) =>
  fc.constantFrom(`  ${name} ${value}`, `${name}=${value}`, `\t${name} = ${value}`),
);
const block = fc
  .tuple(fc.array(pattern, { minLength: 1, maxLength: 3 }), fc.array(line, { maxLength: 3 }))
  .map(([patterns, lines]) => [`Host ${patterns.join(" ")}`, ...lines].join("\n"));
const config = fc
  .tuple(fc.array(line, { maxLength: 2 }), fc.array(block, { maxLength: 4 }))
  .map(([preamble, blocks]) => [...preamble, ...blocks, ""].join("\n"));
/** A node as the session gate asks: its host, its `-o Port`, its `-o ProxyJump`. */
const node = fc.record({
  host,
  port: fc.option(fc.constantFrom(22, 2201), { nil: undefined }),
  proxyJump: fc.option(fc.constantFrom("none", "other,bastion", "audit@10.9.9.9:2022"), {
    nil: undefined,
    freq: 3,
  }),
});

describe("a node's hop settings from plain Host blocks, against ssh -G", () => {
  const dir = mkdtempSync(join(tmpdir(), "qm-ssh-hop-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const home = join(dir, "home");
  mkdirSync(join(home, ".ssh"), { recursive: true });
  const userFile = join(home, ".ssh", "config");
  const systemFile = join(dir, "ssh_config");
  // ssh reads each file from the top with every line applying: as one `-F` file, the system's
  // part starts after a `Host *` line.
  const joined = join(dir, "joined");

  it("the resolver's answer is what ssh -G prints, or it asks ssh -G", async () => {
    let answered = 0;
    let asked = 0;
    await fc.assert(
      fc.asyncProperty(
        config,
        config,
        fc.array(node, { minLength: 1, maxLength: 4 }),
        async (user, system, nodes) => {
          writeFileSync(userFile, user);
          writeFileSync(systemFile, system);
          writeFileSync(joined, `${user}Host *\n${system}`);
          const resolve = await sshConfigHop({ systemFile, homes: [home] });
          await Promise.all(
            nodes.map(async ({ host, port, proxyJump }) => {
              asked++;
              const answer = resolve?.(host, port, proxyJump);
              if (!answer) return;
              answered++;
              const options = [
                ...(port ? ["-o", `Port=${port}`] : []),
                ...(proxyJump ? ["-o", `ProxyJump=${proxyJump}`] : []),
              ];
              assert.deepEqual(answer, await sshG(["-F", joined, ...options, "--", host]), host);
            }),
          );
        },
      ),
      RUNS,
    );
    // Most answers come from the scan: the property is not met by asking ssh -G always.
    assert.ok(answered > asked / 2, `${answered} of ${asked} answered`);
  });

  it("a config with a Host block per node: each block found by name keeps ssh's order", async () => {
    // As a tool writes one (an inventory's export), with wildcard blocks before and after, and
    // negations on the named blocks' own lines.
    const names = Array.from({ length: 400 }, (_, i) => `node-${i}`);
    const text = [
      "Host node-1? !node-13",
      "  HostName wild-early",
      ...names.flatMap((name, i) => [
        i % 7 === 0 ? `Host ${name} !${name}` : `Host ${name} other-${i}`,
        `  HostName ${name}.example.net`,
        ...(i % 5 === 0 ? [`  Port ${2200 + i}`] : []),
      ]),
      "Host node-*",
      "  Port 2022",
      "  ProxyJump bastion",
      "",
    ].join("\n");
    const file = join(dir, "per-node");
    writeFileSync(file, text);
    const resolve = await sshConfigHop({ configFile: file, homes: [home] });
    assert.ok(resolve);
    for (const host of [
      "node-0",
      "node-5",
      "node-7",
      "node-12",
      "node-13",
      "node-14",
      "node-399",
      "other-3",
      "elsewhere",
    ])
      assert.deepEqual(
        resolve(host, undefined, undefined),
        await sshG(["-F", file, "--", host]),
        host,
      );
  });
});

describe("Include cycles and fan-out", () => {
  it("are read a bounded number of times and left to ssh -G", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-include-"));
    // Each file read counted; past 5,000 reads the scan is stopped (an exponential walk never ends).
    const readFile = fsp.readFile;
    let reads = 0;
    fsp.readFile = ((...args: Parameters<typeof readFile>) => {
      if (++reads > 5000) return Promise.reject(new Error("read too often"));
      return readFile(...args);
    }) as typeof readFile;
    syncBuiltinESMExports();
    try {
      // A file including itself four times; a folder whose files include the folder's glob.
      const self = join(dir, "self");
      writeFileSync(self, `Include ${self} ${self} ${self} ${self}\nHost x\n  Port 2222\n`);
      mkdirSync(join(dir, "conf.d"));
      const glob = join(dir, "glob");
      writeFileSync(glob, `Include ${dir}/conf.d/*\n`);
      for (const name of ["a.conf", "b.conf", "c.conf"])
        writeFileSync(join(dir, "conf.d", name), `Include ${dir}/conf.d/*\n`);
      // Eight levels, each including the next four times: 21,845 reads, no cycle.
      const level = (n: number) => join(dir, `level-${n}`);
      for (let n = 0; n < 7; n++)
        writeFileSync(
          level(n),
          `Include ${Array(4)
            .fill(level(n + 1))
            .join(" ")}\n`,
        );
      writeFileSync(level(7), "Host x\n  Port 2222\n");
      for (const [file, ssh] of [
        [self, /Too many recursive configuration includes/],
        [glob, /Too many recursive configuration includes/],
        [level(0), { hostname: "x", port: 2222 }],
      ] as const) {
        reads = 0;
        assert.equal(await sshConfigHop({ configFile: file }), undefined, file);
        assert.ok(reads <= 256, `${file}: ${reads} reads`);
        // What ssh -G answers instead: a refusal, or the settings.
        if (ssh instanceof RegExp) await assert.rejects(sshG(["-F", file, "x"]), ssh);
        else assert.deepEqual(await sshG(["-F", file, "x"]), ssh);
      }
    } finally {
      fsp.readFile = readFile;
      syncBuiltinESMExports();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
