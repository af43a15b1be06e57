import { isDeepStrictEqual } from "node:util";
import * as z from "zod";
import type { Latent } from "../cause.js";
import { keyedList, pathIn, within, type Domain, type Finding } from "../domain.js";
import { FSTAB, mountCause, mountLatentCause, NOT_AT_BOOT, sameAtBoot } from "./cause.js";
import { mountUnitName, UNIT_DIRS } from "./units.js";
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

/** A source naming its device by a link udev makes (a UUID, a label, /dev/disk/by-*). */
const byLink = (boot: BootMount) =>
  /^(UUID|LABEL|PARTUUID|PARTLABEL)=/.test(boot.source) || boot.source.startsWith("/dev/disk/by-");
const bound = (boot: BootMount) => boot.options.includes("bind") || boot.options.includes("rbind");

/**
 * What the next boot mounts, read as the live value of `attribute` reads; undefined where the boot's
 * words cannot be compared with mountinfo's (a path being bound, `auto`, a device link the host
 * could not follow).
 */
function bootValue(boot: BootMount, attribute: Attribute, live: string[] | string) {
  // A device link leading to the device mounted now names it as mountinfo does.
  const sameDevice = byLink(boot) ? boot.sameDevice : !/^ID=/.test(boot.source) || undefined;
  if (attribute === "source") {
    if (bound(boot) || sameDevice === undefined) return undefined;
    return byLink(boot) && sameDevice ? live : boot.source;
  }
  if (attribute === "fstype")
    return ["auto", "none"].includes(boot.fstype) ||
      boot.fstype.includes(",") ||
      bound(boot) ||
      sameDevice !== true
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

/** A path as mountinfo and fstab write it: a space, tab, newline or backslash as an octal escape. */
const escapedPath = (path: string) =>
  path.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`);

// Shell built-ins only: no process. `qm_w` holds the declared mount points as mountinfo writes them
// (escaped, so without a blank), each between blanks; `qm_a` is 1 for a snapshot (every line).
// fstab is read first: a line naming its device by UUID=, LABEL=, PARTUUID=, PARTLABEL= or a
// /dev/disk/by-* link leaves that link in `qm_r`, which mountinfo's line for the same mount point
// then tests against its own device (`-ef`, both followed: no readlink) into `qm_d`. A source that
// is no /dev path is never looked at, so an automount point is never touched.
const WANTED = 'case $qm_a$qm_w in 1*|*" $qm_p "*) ;; *) continue ;; esac';
const FSTAB_LOOP = [
  "qm_r=; qm_n=0",
  '[ -r /etc/fstab ] && while read -r qm_s qm_p qm_t qm_o qm_x || [ -n "$qm_s" ]; do',
  "qm_n=$((qm_n + 1))",
  'case $qm_s in "#"*) continue ;; esac',
  '[ -n "$qm_t" ] || continue',
  WANTED,
  'printf \'%s:%s %s %s %s\\n\' "$qm_n" "$qm_s" "$qm_p" "$qm_t" "$qm_o"',
  "qm_l=",
  "case $qm_s in UUID=*) qm_l=uuid ;; LABEL=*) qm_l=label ;; PARTUUID=*) qm_l=partuuid ;; PARTLABEL=*) qm_l=partlabel ;; esac",
  'qm_v=${qm_s#*=}; qm_v=${qm_v#\\"}; qm_v=${qm_v%\\"}',
  '[ -z "$qm_l" ] || qm_l=/dev/disk/by-$qm_l/$qm_v',
  "case $qm_s in /dev/disk/by-*) qm_l=$qm_s ;; esac",
  '[ -z "$qm_l" ] || qm_r="$qm_r',
  '$qm_p $qm_l"',
  "done < /etc/fstab",
].join("\n");
/**
 * Lines of mountinfo the shell's own `read` takes, which in dash is a system call per byte: past
 * this many (a container host's thousands of mounts), one awk is cheaper.
 */
const BUILTIN_LINES = 100;
const MOUNTINFO_LOOP = [
  "qm_d=; qm_c=0",
  "{",
  `while [ "$qm_c" -lt ${BUILTIN_LINES} ] && { IFS= read -r qm_i || [ -n "$qm_i" ]; }; do`,
  "qm_c=$((qm_c + 1))",
  // Field 5, the mount point: each `#* ` takes one field off the front.
  "qm_t=${qm_i#* }; qm_t=${qm_t#* }; qm_m=${qm_t%% *}; qm_t=${qm_t#* }; qm_t=${qm_t#* }; qm_p=${qm_t%% *}",
  WANTED,
  "printf '%s\\n' \"$qm_i\"",
  'case $qm_r in *"',
  '$qm_p "*) ;; *) continue ;; esac',
  'qm_l=${qm_r##*"',
  '$qm_p "}; qm_l=${qm_l%%"',
  '"*}',
  "qm_t=${qm_i#* - }; qm_t=${qm_t#* }; qm_t=${qm_t%% *}",
  "case $qm_t in /dev/*) ;; *) qm_t=/dev/block/$qm_m ;; esac",
  "qm_v=",
  'if ! [ -d "${qm_l%/*}" ]; then :',
  'elif [ "$qm_l" -ef "$qm_t" ] || [ "$qm_l" -ef "/dev/block/$qm_m" ]; then qm_v=same',
  'elif [ -e "$qm_t" ] || [ -e "/dev/block/$qm_m" ]; then qm_v=other; fi',
  '[ -z "$qm_v" ] || qm_d="$qm_d$qm_p $qm_v',
  '"',
  "done",
  // Past the shell's lines, one awk reads the rest of the same open file: the shell's `read` took
  // no byte beyond its last line. Those lines' devices are not tested.
  `[ "$qm_c" -lt ${BUILTIN_LINES} ] || awk -v a="$qm_a" 'BEGIN { n = split(ARGV[1], p, " "); for (i = 1; i <= n; i++) k[p[i]] = 1; ARGC = 1 } a || ($5 in k)' "$qm_w"`,
  "} < /proc/self/mountinfo",
].join("\n");
/** Whether the unit file `$qm_g` is in use: not masked (empty, or a link to /dev/null). */
const UNMASKED =
  '[ -f "$qm_g" ] && [ -s "$qm_g" ] && [ -r "$qm_g" ] && ! [ "$qm_g" -ef /dev/null ]';
/** Each `[Section]` and What=, Where=, Type=, Options= line of the unit file `$qm_g`, after its name. */
const UNIT_LINES = [
  'while read -r qm_l || [ -n "$qm_l" ]; do',
  `case $qm_l in "["*|${["What", "Where", "Type", "Options"].map((key) => `${key}=*|${key}[[:blank:]]*`).join("|")}) printf '%s:%s\\n' "$qm_g" "$qm_l" ;; esac`,
  'done < "$qm_g"',
].join("\n");
// The boot's mount units of the declared mount points (`qm_z`, by name; a snapshot: all): those a
// `.wants` or `.requires` link pulls in, read from the first folder holding them.
const UNITS_LOOP = [
  "qm_u=",
  `for qm_f in ${UNIT_DIRS.map((dir) => `${dir}/*.wants/*.mount ${dir}/*.requires/*.mount`).join(" ")}; do`,
  '[ -h "$qm_f" ] || continue',
  "qm_f=${qm_f##*/}",
  // A name holding a newline would break its lines: no unit systemd loads by a declared path's name.
  'case $qm_f in *"',
  '"*) continue ;; esac',
  'case $qm_u in *" $qm_f "*) continue ;; esac',
  'qm_u="$qm_u $qm_f "',
  'case $qm_a$qm_z in 1*|*" $qm_f "*) ;; *) continue ;; esac',
  `for qm_g in ${UNIT_DIRS.join(" ")}; do`,
  "qm_g=$qm_g/$qm_f",
  '[ -h "$qm_g" ] || [ -e "$qm_g" ] || continue',
  `if ${UNMASKED}; then`,
  "printf '%s:\\n' \"$qm_g\"",
  UNIT_LINES,
  "fi",
  "break",
  "done",
  "done",
].join("\n");
// The drop-ins of the declared mount points' units (a snapshot: of every mount unit) in every unit
// folder, each `FOLDER/NAME.mount.d/FILE.conf` as a unit file is sent (a masked one by its name
// alone): the parser applies them in systemd's order. Each of fstab's lines is a unit too
// (systemd-fstab-generator's), which they change as well.
const DROPINS_LOOP = [
  `for qm_g in ${UNIT_DIRS.map((dir) => `${dir}/*.mount.d/*.conf`).join(" ")}; do`,
  '[ -h "$qm_g" ] || [ -e "$qm_g" ] || continue',
  'case $qm_g in *"',
  '"*) continue ;; esac',
  "qm_f=${qm_g%/*}; qm_f=${qm_f##*/}; qm_f=${qm_f%.d}",
  'case $qm_a$qm_z in 1*|*" $qm_f "*) ;; *) continue ;; esac',
  "printf '%s:\\n' \"$qm_g\"",
  `! ${UNMASKED} || {`,
  UNIT_LINES,
  "}",
  "done",
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
    // Only the declared mount points' lines leave the host (a snapshot sends all), and a mount point
    // is never stat'ed (a stat of an automount point would mount it). The declared paths and their
    // units' names reach the shell as quoted words, compared as text, never as a pattern.
    if (declared?.length === 0) return "true";
    // Each between blanks, none holding one.
    const list = (name: (path: string) => string) =>
      declared ? ` ${declared.map((mount) => name(mount.path)).join(" ")} ` : "";
    return [
      "if [ -r /proc/self/mountinfo ]; then",
      `qm_w=${ctx.quote(list(escapedPath))}; qm_z=${ctx.quote(list(mountUnitName))}; qm_a=${declared ? 0 : 1}`,
      ctx.mark("fstab"),
      FSTAB_LOOP,
      ctx.mark("mountinfo"),
      MOUNTINFO_LOOP,
      ctx.mark("devices"),
      `printf '%s' "$qm_d"`,
      ctx.mark("units"),
      UNITS_LOOP,
      ctx.mark("dropins"),
      DROPINS_LOOP,
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
        // The file that says it: a drop-in setting it, else the fstab line or unit.
        const because = boot && (boot.setBy?.[attribute] ?? boot.because);
        const latent: Latent | undefined =
          atBoot !== undefined && !isDeepStrictEqual(atBoot, have)
            ? { after: "reboot", becomes: atBoot, because: because! }
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
        else if (atBoot !== undefined) finding.detail = sameAtBoot(because!);
        if (got.fstype === "autofs" && attribute !== "fstype")
          finding.detail =
            "an automount point: what it mounts on access is not read (reading it would mount it)";
        findings.push(finding);
      }
    }
    return findings;
  },
  // fstab's mtime, and each declared point's unit's wherever systemd may read it, and the mount
  // units' drop-ins': through the stat the cause section runs anyway. Which package shipped a
  // declared point's unit: looked up only in the file lists of the packages configured since the
  // last audit, in the awk that reads dpkg's log.
  records: (declared) => ({
    shippedSince: declared.flatMap((mount) =>
      UNIT_DIRS.map((dir) => `${dir}/${mountUnitName(mount.path)}`),
    ),
    stat: [
      { under: "/etc", entries: ["fstab"] },
      ...UNIT_DIRS.map((under) => ({
        under,
        entries: declared.map((mount) => mountUnitName(mount.path)),
      })),
      ...UNIT_DIRS.map((dir) => ({ under: `${dir}/*.mount.d/*.conf` })),
    ],
  }),
  cause: mountCause,
  latentCause: mountLatentCause,
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
