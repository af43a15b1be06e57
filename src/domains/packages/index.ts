import * as z from "zod";
import { ProbeParseError } from "../../errors.js";
import { pathIn, type Domain, type Finding } from "../domain.js";
import { DEFAULT_SNAPSHOT_OPTIONS, type SnapshotOptions } from "../snapshot-options.js";
import { packageCause } from "./cause.js";
import { RPM_QUERY, RPM_QUERY_SETUP } from "../rpm-query.js";
import { chosenProbe, parseChosen } from "./chosen.js";
import { ABSENT, ANY_VERSION, parseConstraint, satisfies } from "./constraint.js";
import {
  DPKG_STATE_MEANING,
  PACKAGE_FORMATS,
  liveVersion,
  parsePackageDatabase,
  type PackageFormat,
  type PackagesLive,
} from "./parse.js";

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
  .superRefine((text, ctx) => {
    const constraint = parseConstraint(text);
    if ("error" in constraint) ctx.addIssue({ code: "custom", message: constraint.error });
  })
  .describe(
    `an exact version, "${ANY_VERSION}", "${ABSENT}", a pattern like "9.*", or comparisons in the host's version order like ">= 1.2, < 2"`,
  );
export const PackagesDeclared = z.record(PackageName, PackageVersion);
export type PackagesDeclared = z.infer<typeof PackagesDeclared>;

// One line per installed instance: name, epoch:version-release, arch (parseRpm reads it).
const RPM_FORMAT = "%{NAME}\\t%{EPOCH}:%{VERSION}-%{RELEASE}\\t%{ARCH}\\n";

const DATABASES: Record<PackageFormat, string> = {
  dpkg: "/var/lib/dpkg/status",
  rpm: "the rpm database",
  apk: "/lib/apk/db/installed",
};

// The shared awk's filter of a package database (`dpkg` or `apk`, its file, the reason it cannot be
// read, the wanted names): each wanted package's lines of the fields the parser reads. A name is the
// rest of its line, as dpkg and apk write it: no line is split into fields. The database is read a
// record (a package's lines up to a blank line) at a time, through `qm_record` (another section may
// ask for some of its records too), with the main input's RS restored after:
// a record whose one package line names a package not wanted is passed over whole, unsplit; any
// other is read line by line, a line's package line deciding for the lines after it, as if the file
// were read line by line (a record holding no package line, or several, included).
const WANTED = [
  'function packages_name(t, n,   e) { e = index(t, "\\n"); return e ? substr(t, n + 1, e - n - 1) : substr(t, n + 1) }',
  "function packages_wanted(  i, w, k, r, f, p, n, q, rs, s, h, t, a, m, j) {",
  'f = qm_v[2]; if (qm_v[1] == "dpkg") { p = "Package: "; q = "^(Package|Status|Version|Architecture):" }',
  'else { p = "P:"; q = "^[PVA]:" }',
  "n = length(p); for (i = 4; i <= qm_vn; i++) w[qm_v[i]] = 1",
  'rs = RS; RS = ""',
  "while ((r = qm_record(f)) > 0) { s = qm_rec",
  // The record from its first package line on (h: the record starts with it).
  '  h = substr(s, 1, n) == p; t = h ? s : (i = index(s, "\\n" p)) ? substr(s, i + 1) : ""',
  '  if (t == "" ? !k : (h || !k) && !index(t, "\\n" p) && !(packages_name(t, n) in w)) { k = 0; continue }',
  '  m = split(s, a, "\\n"); for (j = 1; j <= m; j++) { if (substr(a[j], 1, n) == p) k = (substr(a[j], n + 1) in w); if (k && a[j] ~ q) print a[j] } }',
  'RS = rs; if (r < 0) printf "\\n%s unknown %s\\n", qm_n, qm_v[3]; close(f) }',
].join("\n");

export const packages: Domain<PackagesDeclared, PackagesLive, "packages"> = {
  name: "packages",
  specPath: ["packages", "installed_manifest"],
  schema: PackagesDeclared,
  severity: "high",
  onDrift: "accept",
  remediation: "Reconcile package version pins in the deployment repo, or accept the live version.",
  awk: WANTED,
  probe(declared, ctx) {
    // With packages declared, the host sends only their entries (a few hundred bytes, not the whole
    // database); a snapshot (nothing declared) reads everything. A database the shared awk cannot
    // open, or grep's exit status past 1, means it could not be read, which is not "absent".
    const names = declared ? Object.keys(declared) : undefined;
    const wanted = (format: "dpkg" | "apk", file: string) =>
      ctx.awk("packages_wanted", {
        values: [format, file, ctx.quote(`cannot read ${file}`), ...names!.map(ctx.quote)],
      });
    const dpkg = names
      ? wanted("dpkg", "/var/lib/dpkg/status")
      : `grep -E '^(Package|Status|Version|Architecture):' /var/lib/dpkg/status || [ $? -eq 1 ] || ${ctx.unknown("cannot read /var/lib/dpkg/status")}`;
    const apk = names
      ? wanted("apk", "/lib/apk/db/installed")
      : `grep -E '^[PVA]:' /lib/apk/db/installed || [ $? -eq 1 ] || ${ctx.unknown("cannot read /lib/apk/db/installed")}`;
    // rpm -q names the packages it does not find on stdout and exits non-zero for them: not a
    // failure. Nor does it fail on a database it cannot open (every package "not installed"): only
    // its error (stderr, in its own words) tells.
    const rpm = names
      ? `{ qm_e=$(LC_ALL=C ${RPM_QUERY} -q --qf '${RPM_FORMAT}' -- ${names.map(ctx.quote).join(" ")} 2>&1 >&3); } 3>&1; [ $? -le ${names.length} ] && case "$qm_e" in *"cannot open Packages"*) false;; esac`
      : `${RPM_QUERY} -qa --qf '${RPM_FORMAT}'`;
    // A snapshot (nothing declared) also asks which packages were installed on purpose.
    const chosen = names ? undefined : chosenProbe(ctx.mark);
    const then = (format: keyof typeof DATABASES) => (chosen ? [`  ${chosen[format]}`] : []);
    return [
      "if [ -f /var/lib/dpkg/status ]; then",
      `  ${ctx.mark("dpkg")}`,
      `  ${dpkg}`,
      ...then("dpkg"),
      "elif [ -f /lib/apk/db/installed ]; then",
      `  ${ctx.mark("apk")}`,
      `  ${apk}`,
      ...then("apk"),
      // A database found by its files: busybox has an rpm applet wherever it runs, Alpine included.
      "elif { [ -d /var/lib/rpm ] || [ -d /usr/lib/sysimage/rpm ]; } && command -v rpm >/dev/null 2>&1; then",
      `  ${ctx.mark("rpm")}`,
      RPM_QUERY_SETUP,
      `  ${rpm} || ${ctx.unknown("rpm could not read its database")}`,
      ...then("rpm"),
      "else",
      `  ${ctx.unknown("no dpkg, rpm or apk package database")}`,
      "fi",
    ].join("\n");
  },
  parse(output, ctx) {
    const parts = ctx.parts(output);
    const [label, text] = parts[0] ?? [];
    if (parts.length > 3 || !PACKAGE_FORMATS.includes(label as PackageFormat)) {
      throw new ProbeParseError(
        "packages",
        "output does not name a package database (dpkg, rpm or apk)",
      );
    }
    const live = parsePackageDatabase(label as PackageFormat, text!);
    // A failed read of the marks ends with the reason's part: it wins over what came before it.
    const [chosenLabel, chosenText] = parts.at(-1)!;
    if (parts.length > 1) live.chosen = parseChosen(chosenLabel, chosenText, live);
    return live;
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    for (const [name, want] of Object.entries(declared)) {
      const instances = live.installed.get(name);
      const got = instances ? liveVersion(instances) : ABSENT;
      const constraint = parseConstraint(want);
      // The schema refused anything else; a constraint that cannot be read is never met.
      const met =
        !("error" in constraint) &&
        satisfies(constraint, instances?.map((i) => i.version) ?? [], got, live.format);
      if (met) continue;
      const finding: Finding = {
        key: name,
        declared: want,
        live: got,
        path: pathIn(this, name),
      };
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
  records(declared) {
    return { packages: Object.keys(declared) };
  },
  cause: packageCause,
  snapshot(live, options = DEFAULT_SNAPSHOT_OPTIONS) {
    // Names come from the host's database: built by entries, so `__proto__` stays a key.
    const names = declaredNames(live, options);
    if (!names.length || options.packages === "none") return undefined;
    return Object.fromEntries(
      names.map((name) => [
        name,
        options.packages !== "versions" && !options.pinned?.has(name)
          ? ANY_VERSION
          : liveVersion(live.installed.get(name)!),
      ]),
    );
  },
  snapshotLeftOut(live, options) {
    if (options.packages !== "chosen") return undefined;
    if (live.chosen && "unknown" in live.chosen) return { count: 0, unknown: live.chosen.unknown };
    return { count: live.installed.size - declaredNames(live, options).length };
  },
  skipsSnapshot: (options) => options.packages === "none",
};

/**
 * The packages a snapshot declares, sorted: with `chosen`, those the package manager marks as
 * installed on purpose (and the pinned ones); every installed one otherwise, or where the host
 * cannot tell.
 */
function declaredNames(live: PackagesLive, options: SnapshotOptions): string[] {
  const names = [...live.installed.keys()].sort();
  const chosen = live.chosen && "names" in live.chosen ? live.chosen.names : undefined;
  if (options.packages !== "chosen" || !chosen) return names;
  return names.filter((name) => chosen.has(name) || options.pinned?.has(name));
}
