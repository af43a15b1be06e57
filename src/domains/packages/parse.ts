import { ProbeParseError } from "../../errors.js";
import { rpmVersion } from "../rpm-version.js";

export const PACKAGE_FORMATS = ["dpkg", "rpm", "apk"] as const;
export type PackageFormat = (typeof PACKAGE_FORMATS)[number];

/**
 * One installed instance: a package can be installed once per architecture (or per version, for
 * kernels).
 */
export interface PackageInstance {
  version: string;
  arch: string;
}

/** Which installed packages were installed on purpose, or why the host cannot tell. */
export type Chosen = { names: Set<string> } | { unknown: string };

export interface PackagesLive {
  format: PackageFormat;
  /** name -> installed instances */
  installed: Map<string, PackageInstance[]>;
  /**
   * name -> dpkg state of a package the database knows but that is not installed (config-files,
   * half-installed)
   */
  notInstalled: Map<string, string>;
  /** Which packages were installed on purpose, when a snapshot asked (`chosen.ts`). */
  chosen?: Chosen;
}

const DPKG_WANT = new Set(["unknown", "install", "hold", "deinstall", "purge"]);
const DPKG_ERROR = new Set(["ok", "reinstreq"]);
const DPKG_STATES = new Set([
  "not-installed",
  "config-files",
  "half-installed",
  "unpacked",
  "half-configured",
  "triggers-awaited",
  "triggers-pending",
  "installed",
]);
// Only triggers remain to run: the package's files and version are in place.
const DPKG_INSTALLED_STATES = new Set(["installed", "triggers-awaited", "triggers-pending"]);

/** What a dpkg state means to an operator, for a package that does not count as installed. */
export const DPKG_STATE_MEANING: Record<string, string> = {
  "config-files": "removed, only its configuration files remain",
  "half-installed": "an installation or removal was interrupted",
  unpacked: "unpacked but never configured",
  "half-configured": "configuration failed or was interrupted",
  "not-installed": "known to dpkg but not installed",
};

function addInstance(
  installed: Map<string, PackageInstance[]>,
  name: string,
  instance: PackageInstance,
): void {
  const list = installed.get(name);
  if (list) list.push(instance);
  else installed.set(name, [instance]);
}

/**
 * `grep -E '^(Package|Status|Version|Architecture):'` over /var/lib/dpkg/status. A stanza starts
 * at `Package:`; a value that is not one dpkg writes means the text was cut or is not dpkg's.
 */
export function parseDpkg(text: string): PackagesLive {
  const live: PackagesLive = { format: "dpkg", installed: new Map(), notInstalled: new Map() };
  let current: { name: string; status?: string; version?: string; arch?: string } | undefined;
  const finish = () => {
    if (!current) return;
    if (current.status === undefined)
      throw new ProbeParseError("packages", `dpkg entry ${current.name} has no Status`);
    const [want, error, state] = current.status.split(" ");
    if (!DPKG_WANT.has(want!) || !DPKG_ERROR.has(error!) || !DPKG_STATES.has(state!)) {
      throw new ProbeParseError(
        "packages",
        `dpkg entry ${current.name} has an unreadable Status "${current.status}"`,
      );
    }
    if (DPKG_INSTALLED_STATES.has(state!)) {
      if (current.version === undefined)
        throw new ProbeParseError(
          "packages",
          `installed dpkg entry ${current.name} has no Version`,
        );
      addInstance(live.installed, current.name, {
        version: current.version,
        arch: current.arch ?? "",
      });
    } else if (state !== "not-installed" && !live.installed.has(current.name)) {
      live.notInstalled.set(current.name, state!);
    }
  };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const m = /^(Package|Status|Version|Architecture): (.*)$/.exec(line);
    if (!m)
      throw new ProbeParseError("packages", `unexpected dpkg status line "${line.slice(0, 80)}"`);
    const [, field, value] = m;
    if (field === "Package") {
      finish();
      current = { name: value! };
    } else if (!current) {
      throw new ProbeParseError("packages", `dpkg ${field} line before any Package line`);
    } else if (field === "Status") current.status = value!;
    else if (field === "Version") current.version = value!;
    else current.arch = value!;
  }
  finish();
  for (const name of live.installed.keys()) live.notInstalled.delete(name);
  return live;
}

/**
 * `rpm -qa --qf '%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\t%{ARCH}\n'` (or `rpm -q` of declared
 * names, which adds `package NAME is not installed` lines); an unset epoch prints as `(none)`.
 */
export function parseRpm(text: string): PackagesLive {
  const live: PackagesLive = { format: "rpm", installed: new Map(), notInstalled: new Map() };
  for (const line of text.split("\n")) {
    // `rpm -q NAME` says so for a declared package it does not find.
    if (line === "" || /^package \S+ is not installed$/.test(line)) continue;
    const m = /^([^\t]+)\t(\(none\)|\d+):([^\t]+)\t([^\t]+)$/.exec(line);
    if (!m) throw new ProbeParseError("packages", `unexpected rpm line "${line.slice(0, 80)}"`);
    const [, name, epoch, version, arch] = m;
    // gpg-pubkey entries are signing keys imported into the rpm database, not packages.
    if (name === "gpg-pubkey") continue;
    addInstance(live.installed, name!, {
      version: rpmVersion(epoch!, version!),
      arch: arch === "(none)" ? "" : arch!,
    });
  }
  return live;
}

/** `grep -E '^[PVA]:'` over /lib/apk/db/installed: a `P:` line starts each package. */
export function parseApk(text: string): PackagesLive {
  const live: PackagesLive = { format: "apk", installed: new Map(), notInstalled: new Map() };
  let current: { name: string; version?: string; arch?: string } | undefined;
  const finish = () => {
    if (!current) return;
    if (current.version === undefined)
      throw new ProbeParseError("packages", `apk entry ${current.name} has no V: line`);
    addInstance(live.installed, current.name, {
      version: current.version,
      arch: current.arch ?? "",
    });
  };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const m = /^([PVA]):(.+)$/.exec(line);
    if (!m)
      throw new ProbeParseError("packages", `unexpected apk database line "${line.slice(0, 80)}"`);
    const [, field, value] = m;
    if (field === "P") {
      finish();
      current = { name: value! };
    } else if (!current)
      throw new ProbeParseError("packages", `apk ${field}: line before any P: line`);
    else if (field === "V") current.version = value!;
    else current.arch = value!;
  }
  finish();
  return live;
}

export function parsePackageDatabase(format: PackageFormat, text: string): PackagesLive {
  if (format === "dpkg") return parseDpkg(text);
  if (format === "rpm") return parseRpm(text);
  return parseApk(text);
}

/**
 * The live version of a package as one string: its version when every instance agrees, else
 * each version with the architectures carrying it, e.g. `2.36-9 (amd64), 2.36-8 (i386)`.
 */
export function liveVersion(instances: readonly PackageInstance[]): string {
  // Sets, not lists: a database may hold a package many times, and this stays linear in it.
  const byVersion = new Map<string, Set<string>>();
  for (const { version, arch } of instances) {
    const arches = byVersion.get(version) ?? new Set();
    if (arch) arches.add(arch);
    byVersion.set(version, arches);
  }
  if (byVersion.size === 1) return [...byVersion.keys()][0]!;
  return [...byVersion]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([version, arches]) =>
      arches.size ? `${version} (${[...arches].sort().join(", ")})` : version,
    )
    .join(", ");
}
