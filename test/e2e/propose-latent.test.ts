// Latent drift from audit to pull request on real test hosts: a newer kernel installed beside the
// running one, a sysctl.d line the next boot applies. Each host runs what it declares now: the
// audit reads them clean and counts the items latent, apart from drift; propose opens a ticket per
// item that says what the event changes and what to do before it, never "X → X". Needs root.
import assert from "node:assert/strict";
import { release } from "node:os";
import { after, describe, it } from "node:test";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_propose_latent";
const M = "fleet-manifests";
const KERNEL_HOST = "kern-01";
const SYSCTL_HOST = "boot-01";
// The hosts share this machine's kernel: the one "installed" beside it is a newer release.
const RUNNING = release();
const NEWER = RUNNING.replace(/^(\d+)\.(\d+)/, (_, major: string) => `${Number(major) + 1}.0`);
const PERSISTED = "/etc/sysctl.d/99-qm-tune.conf";
// When apt installed the newer kernel, as the host's logs write it (UTC on the test machines).
const INSTALLED_AT = new Date(Date.now() - 3_600_000);
const logTime = (sep: string) => INSTALLED_AT.toISOString().slice(0, 19).replace("T", sep);

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-latent-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: "{}\n",
    [`${M}/nodes/${KERNEL_HOST}.yaml`]: `system:\n  kernel_version: ${RUNNING}\n`,
    [`${M}/nodes/${SYSCTL_HOST}.yaml`]:
      "system:\n  sysctl_parameters:\n    net.ipv4.tcp_fin_timeout: 60\n",
  },
  setup: async () => {
    fleet = await startFleet(
      [
        {
          name: KERNEL_HOST,
          files: {
            [`/boot/vmlinuz-${NEWER}`]: { contents: "kernel\n" },
            "/var/log/dpkg.log": {
              contents: `${logTime(" ")} install linux-image-${NEWER}:amd64 <none> ${NEWER}-1\n`,
            },
            "/var/log/apt/history.log": {
              contents: [
                "",
                `Start-Date: ${logTime("  ")}`,
                "Commandline: apt-get -y upgrade",
                "Requested-By: alice (1000)",
                `Install: linux-image-${NEWER}:amd64 (${NEWER}-1, automatic)`,
                `End-Date: ${logTime("  ")}`,
                "",
              ].join("\n"),
            },
          },
        },
        {
          name: SYSCTL_HOST,
          sysctls: { "net.ipv4.tcp_fin_timeout": "60" },
          files: { [PERSISTED]: { contents: "# tuning\nnet.ipv4.tcp_fin_timeout = 15\n" } },
        },
      ],
      { prefix: "qml" },
    );
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("latent drift from audit to pull request", () => {
  it("hosts running what they declare read clean with their latent items counted apart; each ticket says what the next boot changes and what to do before it", async () => {
    // Exit 0: latent items are tickets by default, not drift.
    const { file, report } = await run.audit("run-1", 0);
    assert.deepEqual(
      report.nodes.map((n) => [n.name, n.status, n.drift.map((d) => d.key)]),
      [
        [SYSCTL_HOST, "clean", ["net.ipv4.tcp_fin_timeout"]],
        [KERNEL_HOST, "clean", ["kernel_version"]],
      ],
    );
    assert.deepEqual([report.summary.driftItems, report.summary.latentItems], [0, 2]);
    const kernelItem = report.nodes.find((n) => n.name === KERNEL_HOST)!.drift[0]!;
    assert.match(kernelItem.remediation, /Declare the kernel the next boot runs/);
    // What the next boot changes, and who put it in place: the transaction that installed it.
    const installedAt = INSTALLED_AT.toISOString().replace(/\.\d{3}Z$/, "Z");
    assert.deepEqual(
      [kernelItem.cause?.kind, kernelItem.cause?.by, kernelItem.cause?.at],
      ["package", "apt-get (alice)", installedAt],
    );

    const minute = `${installedAt.slice(0, 16).replace("T", " ")} UTC`;
    const change = `linux-image-${NEWER} (new) → ${NEWER}-1`;
    const text = await runCli(["report", "--report", file, "--format", "text"]);
    assert.match(text.stdout, /^2 nodes: 2 clean, 2 latent$/m);
    assert.doesNotMatch(text.stdout, /declared \S+, live/);
    assert.ok(
      text.stdout.includes(
        `the next boot runs ${NEWER} (${NEWER} installed): declare it, or remove it before rebooting`,
      ),
      text.stdout,
    );
    // Who installed it and when is said once, on the cause line.
    assert.ok(
      text.stdout.includes(`    changed by apt-get (alice) at ${minute}: ${change}\n`),
      text.stdout,
    );
    assert.equal(text.stdout.match(/alice/g)?.length, 1, text.stdout);
    const markdown = await runCli(["report", "--report", file, "--format", "markdown"]);
    assert.ok(
      markdown.stdout.includes(
        `the next boot runs \`${NEWER}\` (\`${NEWER} installed\`): declare it, or remove it before rebooting`,
      ),
      markdown.stdout,
    );

    // The fleet page shows them apart from drift: what the next boot changes, node by node.
    const page = await runCli(["report", "--report", file, "--format", "html"]);
    assert.match(page.stdout, /, 0 drift, .*, 2 latent;/);
    assert.match(
      page.stdout,
      /<h2>What the next reboot or restart changes \(<span id="latent-count">2<\/span>\)<\/h2>/,
    );
    assert.ok(
      page.stdout.includes(
        `<td>reboot</td><td>kernel <code>kernel_version</code></td><td>the next boot runs <code>${NEWER}</code> (<code>${NEWER} installed</code>): declare it, or remove it before rebooting; package run by <code>apt-get (alice)</code> at ${installedAt.slice(0, 19).replace("T", " ")}: <code>${change}</code></td></tr>`,
      ),
      page.stdout,
    );
    assert.ok(
      page.stdout.includes(
        `<tr data-node="${SYSCTL_HOST}" data-after="reboot"><td><a href="#node-${SYSCTL_HOST}"><code>${SYSCTL_HOST}</code></a></td><td>reboot</td><td>sysctl <code>net.ipv4.tcp_fin_timeout</code></td><td>the next boot sets <code>net.ipv4.tcp_fin_timeout</code> to <code>15</code>, as <code>${PERSISTED}&#58;2</code> says`,
      ),
      page.stdout,
    );

    await run.propose(["--report", file]);
    const pulls = forge.double.pulls().filter((p) => p.state === "open");
    assertNoSelfChange(pulls);
    const titles = pulls.map((p) => p.title).sort();
    assert.deepEqual(titles, [
      `Remediate latent kernel drift on ${KERNEL_HOST}: kernel_version: reboot pending, becomes ${NEWER}`,
      `Remediate latent sysctl drift on ${SYSCTL_HOST}: net.ipv4.tcp_fin_timeout: reboot pending, becomes 15`,
    ]);
    const kernel = pulls.find((p) => p.title.includes("kernel"))!.body!;
    assert.ok(
      kernel.includes(
        `Quartermaster found **high** latent kernel drift on 1 node: The next boot runs \`${NEWER}\` (\`${NEWER} installed\`): declare it, or remove it before rebooting.\n\nChanged by \`apt-get (alice)\` at ${minute}: \`${change}\`.\n\n`,
      ),
      kernel,
    );
    assert.equal(kernel.match(/alice/g)?.length, 1, kernel);
    assert.match(kernel, /Remediation: Declare the kernel the next boot runs/);
    assert.doesNotMatch(kernel, /Schedule a reboot into the declared kernel/);
    assert.ok(kernel.includes(`| \`${RUNNING}\` (\`reboot pending, becomes ${NEWER}\`) |`), kernel);
    const sysctl = pulls.find((p) => p.title.includes("sysctl"))!.body!;
    assert.ok(
      sysctl.includes(
        `The next boot sets \`net.ipv4.tcp_fin_timeout\` to \`15\`, as \`${PERSISTED}:2\` says`,
      ),
      sysctl,
    );
    assert.match(sysctl, /Remediation: Make the sysctl\.d .* before rebooting/);

    // The next scheduled run reads the host's records only since this audit, which no longer show
    // the install: the latent item keeps the cause read when its coming kernel was first seen, and
    // no ticket is rewritten.
    const bodies = () => pulls.map((p) => forge.double.pulls().find((q) => q.number === p.number));
    const opened = bodies().map((p) => [p?.title, p?.body]);
    const second = await run.auditAndPropose("run-2", 0);
    const kept = second.report.nodes.find((n) => n.name === KERNEL_HOST)!.drift[0]!;
    assert.equal(kept.fingerprint, kernelItem.fingerprint);
    assert.deepEqual(kept.cause, kernelItem.cause);
    assert.deepEqual(
      bodies().map((p) => [p?.title, p?.body]),
      opened,
    );
  });
});
