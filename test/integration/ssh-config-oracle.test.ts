// ssh_config files read as `ssh -G` reads them: every config under test/fixtures/ssh-configs (real
// public ones, see its README, and one written for the constructs they do not use) is resolved by
// Quartermaster and by OpenSSH's own `ssh -G`, host for host: hostname, port, user, proxyjump and
// identityfile must agree. ssh reads Includes under the home of the password database, so each
// config's home (its `ssh/` folder as `.ssh`) is bind-mounted over that home in a mount namespace.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { localSshConfigSource } from "../../src/adopt/inventory/ssh-config-files.js";
import {
  parseSshConfig,
  resolveSshHost,
  sshConfigHosts,
} from "../../src/adopt/inventory/ssh-config.js";

const run = promisify(execFile);
const CORPUS = path.resolve("test/fixtures/ssh-configs");
// Names no config lists one by one: they reach only its patterns and `Host *`.
const UNLISTED = ["unlisted.example.org", "web-7", "WEB-1", "db3", "cache-9"];
const KEYS = ["hostname", "port", "user", "proxyjump", "identityfile"];

/** `ssh -G` for each alias, with `home/.ssh` standing in for the user's own. */
async function sshG(config: string, home: string, aliases: string[]) {
  // Keywords of other platforms (macOS's UseKeychain) would stop ssh before it prints anything.
  const script = `mount --bind "$1" "$2" || exit 1; c=$3; shift 3
    for h; do echo "=== $h"; ssh -G -o IgnoreUnknown='*' -F "$c" "$h" || exit 1; done`;
  const { stdout } = await run(
    "unshare",
    ["-m", "sh", "-c", script, "sh", home, os.userInfo().homedir, config, ...aliases],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const out = new Map<string, Map<string, string[]>>();
  let settings = new Map<string, string[]>();
  for (const line of stdout.split("\n")) {
    if (line.startsWith("=== ")) out.set(line.slice(4), (settings = new Map()));
    const [key, ...rest] = line.split(" ");
    if (KEYS.includes(key!)) settings.set(key!, [...(settings.get(key!) ?? []), rest.join(" ")]);
  }
  return out;
}

test("every ssh_config in the corpus resolves host for host as ssh -G resolves it", async () => {
  const defaults = (await sshG("/dev/null", await emptyHome(), ["x"])).get("x")!;
  const names = (await readdir(CORPUS, { withFileTypes: true })).filter((e) => e.isDirectory());
  assert.ok(names.length >= 7, "the corpus is there");
  let compared = 0;
  for (const { name } of names) {
    const home = await emptyHome();
    const own = path.join(CORPUS, name, "ssh");
    if (await stat(own).catch(() => undefined))
      await cp(own, path.join(home, ".ssh"), { recursive: true });
    const file = path.join(CORPUS, name, "config");
    const config = parseSshConfig(file, await readFile(file, "utf8"), localSshConfigSource(home));
    assert.deepEqual(config.problems, [], name);
    const aliases = [...sshConfigHosts(config).map((h) => h.name), ...UNLISTED];
    const oracle = await sshG(file, home, aliases);
    for (const alias of aliases) {
      const ours = resolveSshHost(config, alias);
      assert.ok(!("problems" in ours), `${name} ${alias}: ${JSON.stringify(ours)}`);
      const seen = oracle.get(alias)!;
      const expected = {
        hostname: seen.get("hostname")![0],
        port: Number(seen.get("port")![0]),
        user: seen.get("user")![0],
        proxyjump: seen.get("proxyjump")?.[0],
        identityfiles: seen.get("identityfile") ?? [],
      };
      assert.deepEqual(
        {
          hostname: ours.hostname,
          port: ours.port ?? 22,
          user: ours.user ?? os.userInfo().username,
          proxyjump: ours.proxyjump,
          identityfiles: ours.identityfiles.length
            ? ours.identityfiles
            : defaults.get("identityfile"),
        },
        expected,
        `${name}: ${alias}`,
      );
      compared++;
    }
    await rm(home, { recursive: true });
  }
  assert.ok(compared >= 60, `${compared} hosts compared`);
});

async function emptyHome(): Promise<string> {
  const home = await mkdtemp(path.join(os.tmpdir(), "qm-ssh-home-"));
  await mkdir(path.join(home, ".ssh"));
  return home;
}
