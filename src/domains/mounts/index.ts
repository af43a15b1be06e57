import { isDeepStrictEqual } from "node:util";
import * as z from "zod";
import type { Latent } from "../cause.js";
import { keyedList, pathIn, within, type Domain, type Finding } from "../domain.js";
import { fstabCause, FSTAB, NOT_AT_BOOT, sameAtBoot } from "./cause.js";
import {
  flagsOf,
  flagWords,
  isFlagWord,
  parseMounts,
  type BootMount,
  type LiveMount,
  type MountsLive,
} from "./parse.js";

const MountPoint = z
  .string()
  .max(4096)
  .regex(
    /^\/(?:[^/\0]+(?:\/[^/\0]+)*)?$/,
    "an absolute path without a trailing slash, like /srv/data",
  );
const Option = z.string().regex(/^[^,\s]{1,200}$/, "one mount option, like nosuid or size=64m");

export const MountDeclared = z.strictObject({
  /** The mount point. */
  path: MountPoint,
  /** What is mounted there, as /proc/self/mountinfo names it: /dev/vdb1, tmpfs, server:/export. */
  source: z.string().min(1).max(4096).optional(),
  fstype: z
    .string()
    .regex(/^[^\s,]{1,100}$/, "a file system type, like ext4 or tmpfs")
    .optional(),
  /**
   * ro (else rw), nosuid, nodev and noexec are compared exactly: one left out must be off. Any
   * other option listed (relatime, size=65536k) must be in effect.
   */
  options: z.array(Option).optional(),
});
export type MountDeclared = z.infer<typeof MountDeclared>;
export const MountsDeclared = keyedList(MountDeclared, "path");
export type MountsDeclared = z.infer<typeof MountsDeclared>;

const ATTRIBUTES = ["source", "fstype", "options"] as const;
type Attribute = (typeof ATTRIBUTES)[number];

/** Declared options as compared: the flags as words (`rw` or `ro` first), then the other words. */
function wantedOptions(options: readonly string[]): string[] {
  return [...flagWords(flagsOf(options)), ...options.filter((option) => !isFlagWord(option))];
}

/** The live options as the declaration reads them: the flags, then those of its other words in effect. */
function liveOptions(mount: LiveMount, declared: readonly string[]): string[] {
  return [
    ...flagWords(mount.flags),
    ...declared.filter((option) => !isFlagWord(option) && mount.options.includes(option)),
  ];
}

/** A source the boot names otherwise than mountinfo will (a UUID, a label, a path being bound). */
const bootNamesSourceOtherwise = (boot: BootMount) =>
  /^(UUID|LABEL|PARTUUID|PARTLABEL|ID)=/.test(boot.source) ||
  boot.source.startsWith("/dev/disk/") ||
  boot.options.includes("bind") ||
  boot.options.includes("rbind");

/**
 * What the next boot mounts, read as the live value of `attribute` reads; undefined where the boot's
 * words cannot be compared with mountinfo's (a UUID, `auto`).
 */
function bootValue(boot: BootMount, attribute: Attribute, live: string[] | string) {
  if (attribute === "source") return bootNamesSourceOtherwise(boot) ? undefined : boot.source;
  if (attribute === "fstype")
    return ["auto", "none"].includes(boot.fstype) ||
      boot.fstype.includes(",") ||
      bootNamesSourceOtherwise(boot)
      ? undefined
      : boot.fstype;
  // Options compare by their flags only: other words (size=64m against size=65536k) are spelled
  // otherwise by fstab than by the kernel.
  const flags = flagWords(flagsOf(boot.options));
  return [...flags, ...(live as string[]).filter((option) => !isFlagWord(option))];
}

/** File systems the kernel or the init system makes, which no operator declares. */
const PSEUDO_TYPES = new Set([
  "autofs",
  "binfmt_misc",
  "bpf",
  "cgroup",
  "cgroup2",
  "configfs",
  "debugfs",
  "devpts",
  "devtmpfs",
  "efivarfs",
  "fusectl",
  "hugetlbfs",
  "mqueue",
  "nsfs",
  "proc",
  "pstore",
  "rpc_pipefs",
  "securityfs",
  "selinuxfs",
  "sysfs",
  "tracefs",
]);

const pseudo = (path: string, mount: LiveMount) =>
  PSEUDO_TYPES.has(mount.fstype) ||
  (mount.fstype === "tmpfs" && /^\/(run|dev|sys|proc)(\/|$)/.test(path));

// Everything in BEGIN: stdin is never read. ARGV holds the unit files, `--`, then the declared
// mount points (`qm_a` set: a snapshot, every line). `dec` takes out the octal escapes mountinfo and
// fstab write (`\040` for a space) to match a declared path; the lines go out as read.
const MOUNTS_AWK = [
  'function mark(label) { printf "\\n%s mark %s\\n", qm_n, label }',
  'function dec(s,  o, i, c) { o = ""; while ((i = index(s, "\\\\")) > 0) { c = substr(s, i + 1, 3);',
  'if (c ~ /^[0-7][0-7][0-7]$/) { o = o substr(s, 1, i - 1) sprintf("%c", substr(c, 1, 1) * 64 + substr(c, 2, 1) * 8 + substr(c, 3, 1)); s = substr(s, i + 4) }',
  "else { o = o substr(s, 1, i); s = substr(s, i + 1) } } return o s }",
  "function want(p) { return qm_a || (dec(p) in w) }",
  "BEGIN {",
  'for (i = 1; i < ARGC; i++) if (k) w[ARGV[i]] = 1; else if (ARGV[i] == "--") k = 1; else u[++nu] = ARGV[i]',
  'mark("mountinfo"); while ((getline l < "/proc/self/mountinfo") > 0) { split(l, f, " "); if (want(f[5])) print l }',
  'mark("fstab"); n = 0; while ((getline l < "/etc/fstab") > 0) { n++; if (split(l, f, " ") >= 3 && f[1] !~ /^#/ && want(f[2])) print n ":" l }',
  'mark("units"); for (i = 1; i <= nu; i++) { print u[i] ":"; while ((getline l < u[i]) > 0) if (l ~ /^[ \\t]*(What|Where|Type|Options)[ \\t]*=/) print u[i] ":" l; close(u[i]) }',
  "exit }",
].join("\n");

export const mounts: Domain<MountsDeclared, MountsLive, "mounts"> = {
  name: "mounts",
  specPath: ["storage", "mounts"],
  schema: MountsDeclared,
  listKey: "path",
  severity: "high",
  onDrift: "ticket",
  keyPrefixes: ["/"],
  remediation:
    "Mount or remount it as the manifest declares, and make /etc/fstab (or its mount unit) say the same; or accept the live mount into the manifest.",
  latentWords: {
    sentence: ({ key, latent }, q) => {
      const [, point = key, attribute] = /^(.*):(source|fstype|options)$/s.exec(key) ?? [];
      const { becomes, because } = latent;
      if (becomes === null) return `the next boot leaves ${q(point)} unmounted: ${q(because)}`;
      const value = Array.isArray(becomes) ? becomes.join(",") : String(becomes);
      const what =
        attribute === undefined
          ? ""
          : ` ${attribute === "fstype" ? "as type" : attribute === "source" ? "from" : "with options"} ${q(value)}`;
      return `the next boot mounts ${q(point)}${what}, as ${q(because)} says`;
    },
    remediation: {
      reboot: `Make ${FSTAB} (or the mount unit) mount what the manifest declares, or remove its line, before rebooting; or declare what it mounts.`,
    },
  },
  probe(declared, ctx) {
    // One awk reads mountinfo, fstab and the enabled mount units, sending only the declared mount
    // points' lines (a snapshot takes all): a mount point is never touched (a stat of an automount
    // point would mount it). The declared paths reach awk as arguments, never as program text or
    // `-v` (which takes escapes out).
    if (declared?.length === 0) return "true";
    const paths = (declared ?? []).map((mount) => ctx.quote(mount.path)).join(" ");
    return [
      "if [ -r /proc/self/mountinfo ]; then",
      "set --",
      'for qm_f in /etc/systemd/system/*.wants/*.mount; do [ -e "$qm_f" ] || continue; qm_f="/etc/systemd/system/${qm_f##*/}"; [ -f "$qm_f" ] && set -- "$@" "$qm_f"; done',
      `awk -v qm_n="$QM_N" -v qm_a=${declared ? 0 : 1} '${MOUNTS_AWK}' "$@" -- ${paths} < /dev/null`,
      `else ${ctx.unknown("no /proc/self/mountinfo: /proc is not mounted")}; fi`,
    ].join("\n");
  },
  parse(output, ctx) {
    return parseMounts(ctx.parts(output));
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    for (const mount of declared) {
      const got = live.mounted.get(mount.path);
      const boot = live.boot.get(mount.path);
      if (!got) {
        findings.push({
          key: mount.path,
          declared: "mounted",
          live: null,
          path: pathIn(this, mount.path),
          ...(boot && { latent: { after: "reboot", becomes: "mounted", because: boot.because } }),
        });
        continue;
      }
      if (!boot)
        findings.push({
          key: mount.path,
          declared: "mounted",
          live: "mounted",
          path: pathIn(this, mount.path),
          latent: { after: "reboot", becomes: null, because: NOT_AT_BOOT },
        });
      for (const attribute of ATTRIBUTES) {
        const want = mount[attribute];
        if (want === undefined) continue;
        const [wanted, have] =
          attribute === "options"
            ? [wantedOptions(want as string[]), liveOptions(got, want as string[])]
            : [want, got[attribute]];
        const atBoot = boot && bootValue(boot, attribute, have);
        const latent: Latent | undefined =
          atBoot !== undefined && !isDeepStrictEqual(atBoot, have)
            ? { after: "reboot", becomes: atBoot, because: boot!.because }
            : undefined;
        if (isDeepStrictEqual(wanted, have) && !latent) continue;
        const finding: Finding = {
          key: `${mount.path}:${attribute}`,
          declared: wanted,
          live: have,
          path: pathIn(this, mount.path, attribute),
        };
        if (latent) finding.latent = latent;
        else if (!boot) finding.detail = NOT_AT_BOOT;
        else if (atBoot !== undefined) finding.detail = sameAtBoot(boot.because);
        if (got.fstype === "autofs" && attribute !== "fstype")
          finding.detail =
            "an automount point: what it mounts on access is not read (reading it would mount it)";
        findings.push(finding);
      }
    }
    return findings;
  },
  records: () => ({ stat: [{ under: "/etc", entries: ["fstab"] }] }),
  cause: fstabCause,
  accept(declared, finding) {
    const [path, attribute] = within(this, finding.path) as [string, Attribute | undefined];
    // A mount point nothing is mounted at leaves the manifest.
    if (attribute === undefined)
      return finding.live === null ? declared.filter((mount) => mount.path !== path) : declared;
    return declared.map((mount) =>
      mount.path === path ? { ...mount, [attribute]: finding.live as string | string[] } : mount,
    );
  },
  snapshot(live) {
    // The persistent mounts: what is mounted where the boot mounts something, pseudo file systems
    // and the runtime's own tmpfs left out.
    const declared = [...live.mounted]
      .filter(([path, mount]) => live.boot.has(path) && !pseudo(path, mount))
      .map(([path, mount]) => ({
        path,
        source: mount.source,
        fstype: mount.fstype,
        options: flagWords(mount.flags),
      }));
    return declared.length ? declared : undefined;
  },
  watchTargets() {
    // The mounts themselves are in /proc; the boot's are in fstab and the units.
    return { paths: [FSTAB], directories: ["/etc/systemd/system"], polled: true };
  },
};
