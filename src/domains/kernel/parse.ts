import { parseBootTime, parseChanged } from "../file-times.js";
import { ProbeParseError } from "../../errors.js";

export interface KernelLive {
  /** The running release, as `uname -r` prints it. */
  running: string;
  /** Releases with a kernel image on disk, oldest first. */
  installed: string[];
  /** Reboot-required markers written since this boot (older ones a reboot already answered). */
  rebootRequired: string[];
  /** The packages that asked for the reboot (Debian's /run/reboot-required.pkgs). */
  rebootPackages: string[];
}

const MARKERS = ["/run/reboot-required", "/run/reboot-needed"];
const PACKAGE = /^[A-Za-z0-9][A-Za-z0-9.+:~_-]{0,127}$/;

/**
 * The markers part: `stat` lines of the markers present and the `btime` line. A marker older than
 * the boot is stale (a reboot that kept /run, as a time namespace's does, answered it).
 */
export function parseMarkers(text: string): string[] {
  const bootedAt = parseBootTime(text) ?? 0;
  return [...parseChanged(text)]
    .filter(([file, changed]) => MARKERS.includes(file) && changed >= bootedAt)
    .map(([file]) => file)
    .sort();
}

/** /run/reboot-required.pkgs: a package name per line; anything else is left out. */
export function parseRebootPackages(text: string): string[] {
  const names = text.split("\n").map((line) => line.trim());
  return [...new Set(names.filter((name) => PACKAGE.test(name)))].sort();
}

/**
 * The release up to its ABI number (`6.1.0-28` of `6.1.0-28-amd64`, `5.14.0-427.13.1` of an el9
 * release): a newer kernel has a newer one; flavour and build suffixes alone do not make it newer.
 */
export function releaseBase(release: string): string {
  return /^\d+(?:\.\d+)*(?:-\d+(?:\.\d+)*)?/.exec(release)?.[0] ?? release;
}

const RELEASE = /^[A-Za-z0-9][A-Za-z0-9._+~-]*$/;

export function parseRunning(text: string): string {
  const release = text.trim();
  if (!release)
    throw new ProbeParseError("kernel", "no running kernel release in /proc/sys/kernel/osrelease");
  if (!RELEASE.test(release))
    throw new ProbeParseError("kernel", `"${release.slice(0, 80)}" is not a kernel release`);
  return release;
}

/** One release per line, from /boot/vmlinuz-<release> and /lib/modules/<release>/vmlinuz. */
export function parseInstalled(text: string): string[] {
  const releases = new Set<string>();
  for (const line of text.split("\n")) {
    // Older Ubuntu ships a signed twin `vmlinuz-<release>.efi.signed` of the same kernel.
    const name = line.trim().replace(/\.efi\.signed$/, "");
    if (!name) continue;
    if (!RELEASE.test(name))
      throw new ProbeParseError("kernel", `"${name.slice(0, 80)}" is not a kernel release`);
    // Versionless images (Arch's vmlinuz-linux) name a flavour, not a release.
    if (/^\d/.test(name)) releases.add(name);
  }
  return [...releases].sort(compareVersions);
}

/**
 * Orders versions as dpkg does (and, for kernel releases, as rpm does): digit runs compare as
 * numbers, other runs character by character with letters before symbols and `~` before anything.
 */
export function compareVersions(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    while ((i < a.length && !isDigit(a[i]!)) || (j < b.length && !isDigit(b[j]!))) {
      const diff = order(a[i]) - order(b[j]);
      if (diff !== 0) return Math.sign(diff);
      i++;
      j++;
    }
    const startA = i;
    const startB = j;
    while (i < a.length && isDigit(a[i]!)) i++;
    while (j < b.length && isDigit(b[j]!)) j++;
    const numA = a.slice(startA, i).replace(/^0+/, "");
    const numB = b.slice(startB, j).replace(/^0+/, "");
    if (numA.length !== numB.length) return Math.sign(numA.length - numB.length);
    if (numA !== numB) return numA < numB ? -1 : 1;
  }
  return 0;
}

function isDigit(c: string): boolean {
  return c >= "0" && c <= "9";
}

function order(c: string | undefined): number {
  if (c === undefined || isDigit(c)) return 0;
  if (c === "~") return -1;
  if (/[A-Za-z]/.test(c)) return c.charCodeAt(0);
  return c.charCodeAt(0) + 256;
}
