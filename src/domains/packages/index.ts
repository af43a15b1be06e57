import { z } from "zod";
import { ProbeParseError } from "../../errors.js";
import type { Domain, Finding } from "../domain.js";
import {
  DPKG_STATE_MEANING,
  PACKAGE_FORMATS,
  liveVersion,
  parsePackageDatabase,
  type PackageFormat,
  type PackagesLive,
} from "./parse.js";

export const ANY_VERSION = "*";
export const ABSENT = "absent";

const PackageName = z
  .string()
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/, "not a package name (like openssl or libc6)");
// YAML reads an unquoted 1.10 as the number 1.1, so a version must arrive as a string.
const PackageVersion = z
  .string({
    error: (issue) =>
      typeof issue.input === "number"
        ? `quote the version (write "${String(issue.input)}"): YAML reads an unquoted version as a number and can change it, as 1.10 becomes 1.1`
        : `a version string, "${ANY_VERSION}" for any version or "${ABSENT}" for not installed`,
  })
  // Not a character set: a snapshot of a package installed at several versions declares them all.
  .regex(/^[^\s\p{Cc}](?:[^\p{Cc}]*[^\s\p{Cc}])?$/u, `a version like 3.0.15-1~deb12u1, "${ANY_VERSION}" or "${ABSENT}"`);
export const PackagesDeclared = z.record(PackageName, PackageVersion);
export type PackagesDeclared = z.infer<typeof PackagesDeclared>;

const DATABASES: Record<PackageFormat, string> = {
  dpkg: "/var/lib/dpkg/status",
  rpm: "the rpm database",
  apk: "/lib/apk/db/installed",
};

/** dpkg and rpm both treat a missing epoch as epoch 0. */
function sameVersion(declared: string, live: string): boolean {
  const strip = (v: string) => v.replace(/^0:/, "");
  return strip(declared) === strip(live);
}

function satisfied(want: string, got: string): boolean {
  if (want === ABSENT || got === ABSENT) return want === got;
  return want === ANY_VERSION || sameVersion(want, got);
}

export const packages: Domain<PackagesDeclared, PackagesLive> = {
  name: "packages",
  title: "Installed packages",
  specPath: ["packages", "installed_manifest"],
  schema: PackagesDeclared,
  severity: "high",
  onDrift: "accept",
  remediation: "Reconcile package version pins in the deployment repo, or accept the live version.",
  probe(_declared, ctx) {
    // One process reads the whole database, whatever is declared: the database is small, and
    // an exit status past 1 (grep's "no match") means it could not be read, which is not "absent".
    return [
      "if [ -f /var/lib/dpkg/status ]; then",
      `  ${ctx.mark("dpkg")}`,
      `  grep -E '^(Package|Status|Version|Architecture):' /var/lib/dpkg/status || [ $? -eq 1 ] || ${ctx.unknown("cannot read /var/lib/dpkg/status")}`,
      "elif command -v rpm >/dev/null 2>&1; then",
      `  ${ctx.mark("rpm")}`,
      `  rpm -qa --qf '%{NAME}\\t%{EPOCH}:%{VERSION}-%{RELEASE}\\t%{ARCH}\\n' || ${ctx.unknown("rpm -qa failed")}`,
      "elif [ -f /lib/apk/db/installed ]; then",
      `  ${ctx.mark("apk")}`,
      `  grep -E '^[PVA]:' /lib/apk/db/installed || [ $? -eq 1 ] || ${ctx.unknown("cannot read /lib/apk/db/installed")}`,
      "else",
      `  ${ctx.unknown("no dpkg, rpm or apk package database")}`,
      "fi",
    ].join("\n");
  },
  parse(output, ctx) {
    const parts = ctx.parts(output);
    const [label, text] = parts[0] ?? [];
    if (parts.length !== 1 || !PACKAGE_FORMATS.includes(label as PackageFormat)) {
      throw new ProbeParseError("packages", "output does not name a package database (dpkg, rpm or apk)");
    }
    return parsePackageDatabase(label as PackageFormat, text!);
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    for (const [name, want] of Object.entries(declared)) {
      const instances = live.installed.get(name);
      const got = instances ? liveVersion(instances) : ABSENT;
      if (satisfied(want, got)) continue;
      const finding: Finding = { key: name, declared: want, live: got, path: [...this.specPath, name] };
      const state = live.notInstalled.get(name);
      if (state) {
        finding.detail = `dpkg state ${state} (${DPKG_STATE_MEANING[state] ?? state}): not counted as installed`;
      } else if (got === ABSENT) {
        finding.detail = `not in ${DATABASES[live.format]}`;
      } else if (instances!.length > 1 && want !== ABSENT) {
        finding.detail = `${instances!.length} instances installed side by side; every one must be at the declared version`;
      }
      findings.push(finding);
    }
    return findings;
  },
  snapshot(live) {
    // Names come from the host's database: built by entries, so `__proto__` stays a key.
    const names = [...live.installed.keys()].sort();
    if (!names.length) return undefined;
    return Object.fromEntries(names.map((name) => [name, liveVersion(live.installed.get(name)!)]));
  },
};
