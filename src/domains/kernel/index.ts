import * as z from "zod";
import { partsByLabel, type Domain, type Finding } from "../domain.js";
import type { Latent } from "../cause.js";
import { installedCause, KERNEL_PACKAGE, rebootCause } from "./cause.js";
import {
  compareVersions,
  parseInstalled,
  parseMarkers,
  parseRebootPackages,
  parseRunning,
  releaseBase,
  type KernelLive,
} from "./parse.js";

export const KernelDeclared = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._+~-]*$/, "not a kernel release (like 6.1.0-28-amd64)");
export type KernelDeclared = z.infer<typeof KernelDeclared>;

/** Appends the reboot-required markers present to `"$@"`. */
const MARKERS_FOUND =
  'for f in /run/reboot-required /run/reboot-needed; do [ -e "$f" ] && set -- "$@" "$f"; done';

// The markers' lines of the probe's one stat as `stat -c '%Y %n'` prints them (a marker is named by
// the probe, never holds a newline), and where one exists the `btime` line of /proc/stat.
const KERNEL_AWK = [
  "function kernel_markers(  r, n, l) { for (r = 1; r <= qm_sr; r++) if (qm_sg[r] == qm_v[1] && !qm_sb[r]) { print qm_sy[r], qm_sn[r]; n++ }",
  '  if (n) { while ((getline l < "/proc/stat") > 0) if (l ~ /^btime /) print l; close("/proc/stat") } }',
].join("\n");

export const kernel: Domain<KernelDeclared, KernelLive, "kernel"> = {
  name: "kernel",
  specPath: ["system", "kernel_version"],
  schema: KernelDeclared,
  severity: "high",
  onDrift: "ticket",
  keyPrefixes: ["kernel_version"],
  remediation: "Schedule a reboot into the declared kernel, or update the manifest.",
  latentWords: {
    // A newer kernel installed: the next boot runs it. A marker alone: the same release again,
    // with what the packages named replaced. Who installed it and when is the item's cause line.
    sentence: ({ live, latent }, q) =>
      latent.becomes === live
        ? `a reboot is pending (${q(latent.because)}): the next boot runs ${q(String(live))} again, with the files those packages replaced`
        : `the next boot runs ${q(String(latent.becomes))} (${q(latent.because)}): declare it, or remove it before rebooting`,
    remediation: {
      reboot:
        "Declare the kernel the next boot runs (`system.kernel_version`) and reboot into it when planned, or remove that kernel before rebooting; a reboot-required marker alone is cleared by the reboot.",
    },
  },
  awk: KERNEL_AWK,
  probe(_declared, ctx) {
    // No process but where a marker exists: reads, globs and tests are shell builtins. osrelease is a string file,
    // which answers dash's byte-by-byte `read` correctly (integer /proc/sys files do not). A
    // modules directory without an image is what a removed kernel leaves behind (DKMS builds),
    // so only images count.
    return [
      ctx.mark("running"),
      "read -r r < /proc/sys/kernel/osrelease && printf '%s\\n' \"$r\"",
      ctx.mark("installed"),
      `for f in /boot/vmlinuz-*; do [ -e "$f" ] && printf '%s\\n' "\${f#/boot/vmlinuz-}"; done`,
      `for d in /lib/modules/*; do [ -e "$d/vmlinuz" ] && printf '%s\\n' "\${d##*/}"; done`,
      // A reboot-required marker's mtime (the probe's one stat) against the boot time, and the
      // packages that asked for it: a process only when a marker exists.
      ctx.mark("markers"),
      ctx.awk("kernel_markers", { values: [ctx.stat(MARKERS_FOUND)] }),
      "set --",
      MARKERS_FOUND,
      ctx.mark("packages"),
      "[ $# -eq 0 ] || [ ! -r /run/reboot-required.pkgs ] || head -c 4096 /run/reboot-required.pkgs",
      "true",
    ].join("\n");
  },
  parse(output, ctx) {
    const parts = partsByLabel("kernel", ctx.parts(output));
    return {
      running: parseRunning(parts.get("running") ?? ""),
      installed: parseInstalled(parts.get("installed") ?? ""),
      rebootRequired: parseMarkers(parts.get("markers") ?? ""),
      rebootPackages: parseRebootPackages(parts.get("packages") ?? ""),
    };
  },
  compare(declared, live) {
    const latent = nextBoot(live);
    if (declared === live.running && !latent) return [];
    const finding: Finding = {
      key: "kernel_version",
      declared,
      live: live.running,
      path: this.specPath,
    };
    if (latent) finding.latent = latent;
    const notes: string[] = [];
    if (
      declared !== live.running &&
      live.installed.length > 0 &&
      !live.installed.includes(declared)
    )
      notes.push(`${declared} is not installed`);
    if (notes.length) finding.detail = notes.join("; ");
    return [finding];
  },
  // The kernels' packages: which transaction installed the one booted.
  records: () => ({ packagesByFile: [KERNEL_PACKAGE] }),
  cause: rebootCause,
  latentCause: installedCause,
  snapshot(live) {
    return live.running;
  },
};

/**
 * What the next boot changes: a newer installed kernel (by release base: a build suffix alone is no
 * newer kernel), or a reboot-required marker of this boot, with the packages that asked for it.
 */
function nextBoot(live: KernelLive): Latent | undefined {
  const newest = live.installed.at(-1);
  const newer =
    newest !== undefined &&
    compareVersions(releaseBase(newest), releaseBase(live.running)) > 0 &&
    newest;
  if (!newer && live.rebootRequired.length === 0) return undefined;
  const reasons = newer ? [`${newer} installed`] : [];
  for (const marker of live.rebootRequired) {
    const packages = marker === "/run/reboot-required" ? live.rebootPackages : [];
    reasons.push(packages.length ? `${marker} (${packages.join(", ")})` : marker);
  }
  return { after: "reboot", becomes: newer || live.running, because: reasons.join("; ") };
}
