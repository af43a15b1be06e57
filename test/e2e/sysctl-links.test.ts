// Persisted sysctl files that are links, through real sshd hosts: the probe's one stat takes links as
// links, and the sysctl parser reads a link's content time from its target's line. Debian's
// /etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf with its target edited after boot and not, a link
// to a file beside it, a dangling link and a name holding a space read as before; a link to a file
// outside the persisted lists, and a name holding a newline, leave that file's time unknown, so no
// runtime write is claimed on that node, and every other cause stays. Needs root.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { stringify } from "yaml";
import { Report, type DriftItem } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

/** Set at runtime to 45 against 60 in /etc/sysctl.conf (the Debian link's target). */
const WRITTEN = "net.ipv4.tcp_fin_timeout";
/** 7 in a sysctl.d file that a link beside it (later in name order) makes the winner. */
const LINKED = "net.ipv4.tcp_keepalive_probes";
/** 3 in a file whose name holds a space. */
const SPACED = "net.ipv4.tcp_syn_retries";
/** A file's time, long before the boot. */
const OLD = 1_700_000_000;
const OLD_ISO = new Date(OLD * 1000).toISOString();

const SAME = "lk-same";
const EDITED = "lk-edited";
const OUTSIDE = "lk-outside";
const NEWLINE = "lk-newline";

/** Shell writing the persisted files every host has, dated OLD, the links made now. */
const PERSISTED = [
  `printf '%s = 60\\n' ${WRITTEN} >> /etc/sysctl.conf`,
  "ln -sfn ../sysctl.conf /etc/sysctl.d/99-sysctl.conf",
  `printf '%s = 7\\n' ${LINKED} > /etc/sysctl.d/80-vendor.conf`,
  "ln -s 80-vendor.conf /etc/sysctl.d/81-link.conf",
  `printf '%s = 3\\n' ${SPACED} > '/etc/sysctl.d/84 space.conf'`,
  "ln -s missing.conf /etc/sysctl.d/83-dangling.conf",
  `touch -d @${OLD} /etc/sysctl.conf /etc/sysctl.d/80-vendor.conf '/etc/sysctl.d/84 space.conf'`,
].join(" && ");

describe("persisted sysctl files that are links", () => {
  let fleet: TestFleet;
  let manifests: string;

  before(async () => {
    const sysctls = { [WRITTEN]: "45", [LINKED]: "7", [SPACED]: "3" };
    fleet = await startFleet(
      [SAME, EDITED, OUTSIDE, NEWLINE].map((name) => ({ name, sysctls, ownRoots: true })),
      { prefix: "qmk" },
    );
    await Promise.all([
      fleet.exec(SAME, PERSISTED),
      fleet.exec(EDITED, PERSISTED),
      fleet.exec(
        OUTSIDE,
        `${PERSISTED} && mkdir -p /etc/qm-out && echo 'kernel.qm_unused = 1' > /etc/qm-out/app.conf && touch -d @${OLD} /etc/qm-out/app.conf && ln -s /etc/qm-out/app.conf /etc/sysctl.d/82-out.conf`,
      ),
      fleet.exec(
        NEWLINE,
        `${PERSISTED} && printf '# nothing\\n' > "/etc/sysctl.d/85-new$(printf '\\nline').conf" && touch -d @${OLD} /etc/sysctl.d/85-new*`,
      ),
    ]);
    // Booted after every file was written; then the Debian link's target edited on one host.
    for (const name of [SAME, EDITED, OUTSIDE, NEWLINE]) await fleet.reboot(name);
    // Dated two seconds on: the boot time is whole seconds, and an edit in its second is not after it.
    await fleet.exec(
      EDITED,
      "echo '# edited after boot' >> /etc/sysctl.conf && touch -d @$(($(date +%s) + 2)) /etc/sysctl.conf",
    );
    manifests = await writeTree({
      "fleet.yaml": stringify({
        system: { sysctl_parameters: { [WRITTEN]: 60, [LINKED]: 9, [SPACED]: 5 } },
      }),
      ...Object.fromEntries(
        [SAME, EDITED, OUTSIDE, NEWLINE].map((name) => [`nodes/${name}.yaml`, "{}\n"]),
      ),
    });
  });
  after(async () => {
    await fleet?.stop();
    if (manifests) await removeTree(manifests);
  });

  test("a link's time is its target's; unknown where no stat'ed line gives it, and then no runtime write is claimed", async () => {
    const json = await runCli([
      "audit",
      "--format",
      "json",
      "--manifests",
      manifests,
      "--ssh-config",
      fleet.sshConfig,
    ]);
    assert.equal(json.exitCode, 1, json.stderr);
    const report = Report.parse(JSON.parse(json.stdout));
    const causes = (name: string) =>
      Object.fromEntries(
        report.nodes
          .find((n) => n.name === name)!
          .drift.map((d: DriftItem) => [d.key, d.cause && { kind: d.cause.kind, at: d.cause.at }]),
      );
    const persisted = {
      // The winner is the link: its time is its target's, not when the link was made.
      [LINKED]: { kind: "persisted", at: OLD_ISO },
      [SPACED]: { kind: "persisted", at: OLD_ISO },
    };
    // No file changed since the boot: a runtime write (the dangling link is not read, as before).
    assert.deepEqual(causes(SAME), { [WRITTEN]: { kind: "runtime", at: undefined }, ...persisted });
    // The Debian link's target changed since the boot: no guess (the audit's unknown cause).
    const unknown = { kind: "unknown", at: undefined };
    assert.deepEqual(causes(EDITED), { [WRITTEN]: unknown, ...persisted });
    // A link to a file outside the persisted lists, a name holding a newline: that file's time is
    // unknown, so nothing says no persisted file changed; the other causes stand.
    assert.deepEqual(causes(OUTSIDE), { [WRITTEN]: unknown, ...persisted });
    assert.deepEqual(causes(NEWLINE), { [WRITTEN]: unknown, ...persisted });
    for (const node of report.nodes) assert.equal(node.unknown, undefined, node.name);
  });
});
