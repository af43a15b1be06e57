import { ProbeParseError } from "../../errors.js";
import { partsByLabel } from "../domain.js";
import { mountUnitName, UNIT_DIRS } from "./units.js";
import { utf8 } from "../../text/utf8.js";

// What is mounted (/proc/self/mountinfo) and what the next boot mounts (/etc/fstab and the mount
// units a target pulls in), as the probe sends them. Pure functions on text.

const SECTION = "mounts";

/** The flags that matter to an operator: each is compared exactly where options are declared. */
export const FLAGS = ["ro", "nosuid", "nodev", "noexec"] as const;
export type Flag = (typeof FLAGS)[number];
export type Flags = Record<Flag, boolean>;

/** What option words do to the flags, in order (mount(8)); `defaults` is rw,suid,dev,exec. */
const SETS: ReadonlyMap<string, Partial<Flags>> = new Map<string, Partial<Flags>>([
  ["ro", { ro: true }],
  ["rw", { ro: false }],
  ["nosuid", { nosuid: true }],
  ["suid", { nosuid: false }],
  ["nodev", { nodev: true }],
  ["dev", { nodev: false }],
  ["noexec", { noexec: true }],
  ["exec", { noexec: false }],
  ["defaults", { ro: false, nosuid: false, nodev: false, noexec: false }],
  ["user", { nosuid: true, nodev: true, noexec: true }],
  ["users", { nosuid: true, nodev: true, noexec: true }],
  ["owner", { nosuid: true, nodev: true }],
  ["group", { nosuid: true, nodev: true }],
]);

/** Whether an option word sets a flag (and is then compared as a flag, not as a word). */
export const isFlagWord = (option: string) => SETS.has(option);

/** The flags a list of option words leaves set, the last word winning. */
export function flagsOf(options: readonly string[]): Flags {
  const flags: Flags = { ro: false, nosuid: false, nodev: false, noexec: false };
  for (const option of options) Object.assign(flags, SETS.get(option));
  return flags;
}

/** The flags as option words: `ro` or `rw` first, then the set ones. */
export const flagWords = (flags: Flags): string[] => [
  flags.ro ? "ro" : "rw",
  ...FLAGS.filter((flag) => flag !== "ro" && flags[flag]),
];

export interface LiveMount {
  source: string;
  fstype: string;
  /** The mount's own options, then the file system's (mountinfo's super options). */
  options: string[];
  flags: Flags;
}

/** What a boot mount's keys set, by the keys of its unit (systemd.mount(5)). */
const BOOT_KEYS = [
  ["What", "source"],
  ["Type", "fstype"],
  ["Options", "options"],
] as const;
export type BootAttribute = (typeof BOOT_KEYS)[number][1];

/** What the next boot mounts at a mount point. */
export interface BootMount {
  source: string;
  fstype: string;
  options: string[];
  /** Where it is said: `/etc/fstab:12`, or the mount unit's file. */
  because: string;
  /** The drop-in that sets an attribute, where one does: it says what the boot mounts instead. */
  setBy?: Partial<Record<BootAttribute, string>>;
  /**
   * For a source naming a device by its link (UUID=, LABEL=, /dev/disk/by-*): whether that link
   * leads to the device mounted there now; absent where the host could not tell.
   */
  sameDevice?: boolean;
}

export interface MountsLive {
  /** The mount visible at each mount point (the last mounted there), in mountinfo's order. */
  mounted: Map<string, LiveMount>;
  /** What /etc/fstab and the mount units the boot pulls in mount at boot, by mount point. */
  boot: Map<string, BootMount>;
}

/**
 * A field of mountinfo or fstab with its octal escapes (`\040` for a space, `\134` for a
 * backslash) taken out, as UTF-8 text.
 */
export function unescapeField(field: string): string {
  const bytes = field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(parseInt(octal, 8) & 0xff),
  );
  return utf8(bytes);
}

/** `mountinfo` lines (proc(5)): the mount point each line is visible at, later lines on top. */
export function parseMountinfo(text: string): Map<string, LiveMount> {
  const mounted = new Map<string, LiveMount>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const fields = line.split(" ");
    const dash = fields.indexOf("-", 6);
    if (dash === -1 || fields.length !== dash + 4 || !/^\d{1,10}$/.test(fields[0]!))
      throw new ProbeParseError(
        SECTION,
        `not a mountinfo line: ${JSON.stringify(line.slice(0, 80))}`,
      );
    const own = fields[5]!.split(",");
    const superOptions = fields[dash + 3]!.split(",");
    const mountPoint = unescapeField(fields[4]!);
    // A mount point mounted over is hidden: the last one listed is what a path there reaches.
    mounted.delete(mountPoint);
    mounted.set(mountPoint, {
      source: unescapeField(fields[dash + 2]!),
      fstype: unescapeField(fields[dash + 1]!),
      options: [...new Set([...own, ...superOptions].map(unescapeField))],
      // Read-only either way: the mount's or the whole file system's.
      flags: { ...flagsOf(own), ro: own.includes("ro") || superOptions.includes("ro") },
    });
  }
  return mounted;
}

/**
 * `POINT same|other` lines: whether the link an fstab line names its device by leads to the device
 * mounted at POINT (escaped as mountinfo writes it), the last line of a point winning.
 */
function parseDevices(text: string): Map<string, boolean> {
  const same = new Map<string, boolean>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const m = /^(\S+) (same|other)$/.exec(line);
    if (!m)
      throw new ProbeParseError(SECTION, `not a device line: ${JSON.stringify(line.slice(0, 80))}`);
    same.set(unescapeField(m[1]!), m[2] === "same");
  }
  return same;
}

/**
 * `N:source point type options` of /etc/fstab (fstab(5)) into what the boot mounts: not swap, not
 * `noauto`, each mount point's last line.
 */
function parseFstab(
  text: string,
  devices: ReadonlyMap<string, boolean>,
  boot: Map<string, BootMount>,
): void {
  for (const line of text.split("\n")) {
    const m = /^(\d{1,9}):(.*)$/.exec(line);
    if (!m) continue;
    const fields = m[2]!.trim().split(/[ \t]+/);
    if (fields.length < 3 || fields[0]!.startsWith("#")) continue;
    const [source, mountPoint, fstype, options = "defaults"] = fields.map(unescapeField);
    const words = options.split(",");
    if (!mountPoint!.startsWith("/") || fstype === "swap" || words.includes("noauto")) continue;
    const sameDevice = devices.get(mountPoint!);
    boot.set(mountPoint!, {
      source: source!,
      fstype: fstype!,
      options: words,
      because: `/etc/fstab:${m[1]}`,
      ...(sameDevice !== undefined && { sameDevice }),
    });
  }
}

/**
 * `FILE:` then `FILE:line` lines of unit files, FILE matching `file`: each `[Section]`, and the
 * What=, Where=, Type= and Options= of [Mount], the last of each winning, by file.
 */
function unitKeys(text: string, file: RegExp, what: string): Map<string, Map<string, string>> {
  const units = new Map<string, Map<string, string>>();
  let unit: Map<string, string> | undefined;
  let section = "";
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const m = file.exec(line);
    if (!m)
      throw new ProbeParseError(
        SECTION,
        `not a ${what} line: ${JSON.stringify(line.slice(0, 80))}`,
      );
    const rest = m[2]!;
    const key = /^(What|Where|Type|Options)[ \t]*=[ \t]*(.*)$/.exec(rest);
    if (rest === "") {
      unit = new Map();
      units.set(utf8(m[1]!), unit);
      section = "";
    } else if (rest.startsWith("[")) section = rest.slice(0, rest.indexOf("]") + 1);
    else if (key && section === "[Mount]") unit?.set(key[1]!, utf8(key[2]!.trimEnd()));
  }
  return units;
}

/** The boot's mount units (systemd.mount(5)), by their Where=. A unit wins over an fstab line. */
function parseUnits(text: string, boot: Map<string, BootMount>): void {
  for (const [file, keys] of unitKeys(text, /^(\/[^\n]*?\.mount):(.*)$/, "mount unit")) {
    const where = keys.get("Where");
    if (where === undefined || !where.startsWith("/")) continue;
    boot.set(where.length > 1 ? where.replace(/\/+$/, "") : where, {
      source: keys.get("What") ?? "",
      fstype: keys.get("Type") ?? "auto",
      options: splitOptions(keys.get("Options") ?? ""),
      because: file,
    });
  }
}

const splitOptions = (options: string) => options.split(",").filter(Boolean);

/**
 * The drop-ins (`FOLDER/NAME.mount.d/FILE.conf`, sent as unit files are) applied to each boot
 * mount's unit, fstab's lines included (systemd-fstab-generator makes each a unit of the same
 * name), as systemd does: by file name across the unit folders, a name in an earlier folder hiding
 * the later ones (a masked one hides them and sets nothing), the last setting of a key winning.
 */
function applyDropins(text: string, boot: Map<string, BootMount>): void {
  const byUnit = new Map<
    string,
    Map<string, { rank: number; file: string; keys: Map<string, string> }>
  >();
  for (const [file, keys] of unitKeys(
    text,
    /^(\/[^\n]*?\.mount\.d\/[^\n/]*?\.conf):(.*)$/,
    "drop-in",
  )) {
    const m = /^(.*)\/([^/]*)\.d\/([^/]*)$/.exec(file)!;
    const rank = UNIT_DIRS.indexOf(m[1]!);
    if (rank === -1) continue;
    const dropins = byUnit.get(m[2]!) ?? new Map();
    byUnit.set(m[2]!, dropins);
    if (!dropins.has(m[3]!) || dropins.get(m[3]!)!.rank > rank)
      dropins.set(m[3]!, { rank, file, keys });
  }
  for (const [point, mount] of boot) {
    const dropins = byUnit.get(mountUnitName(point));
    if (!dropins) continue;
    // Code-unit order, as systemd compares names byte by byte.
    for (const name of [...dropins.keys()].sort()) {
      const { file, keys } = dropins.get(name)!;
      for (const [key, attribute] of BOOT_KEYS) {
        const value = keys.get(key);
        if (value === undefined) continue;
        if (attribute === "options") mount.options = splitOptions(value);
        else mount[attribute] = value;
        // A device link fstab named is no longer what is mounted.
        if (attribute === "source") delete mount.sameDevice;
        mount.setBy = { ...mount.setBy, [attribute]: file };
      }
    }
  }
}

export function parseMounts(parts: readonly [string, string][]): MountsLive {
  const byLabel = partsByLabel(SECTION, parts);
  const mountinfo = byLabel.get("mountinfo");
  if (mountinfo === undefined) throw new ProbeParseError(SECTION, "no mountinfo part");
  const boot = new Map<string, BootMount>();
  parseFstab(byLabel.get("fstab") ?? "", parseDevices(byLabel.get("devices") ?? ""), boot);
  parseUnits(byLabel.get("units") ?? "", boot);
  applyDropins(byLabel.get("dropins") ?? "", boot);
  return { mounted: parseMountinfo(mountinfo), boot };
}
