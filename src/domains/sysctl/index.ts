import * as z from "zod";
import { partsByLabel, pathIn, type Domain, type Finding } from "../domain.js";
import { contentTimes, parseBootTime, parseStated } from "../file-times.js";
import { bootLatent, driftCause } from "./boot.js";
import {
  normalizeValue,
  parsePersistedSysctl,
  PERSISTED_DIRS,
  parseRuntimeSysctl,
  type SysctlLive,
} from "./parse.js";

// `net.ipv4.tcp_syncookies: 1` in a map, or the sysctl.conf-style list `- net.ipv4.tcp_syncookies =
// 1`.
const SysctlValue = z
  .union([z.string(), z.number(), z.boolean()])
  .transform((v) => normalizeValue(String(v)));
const SysctlName = z
  .string()
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$/, "not a sysctl name (like net.ipv4.ip_forward)");
export const SysctlDeclared = z.record(SysctlName, SysctlValue);
export type SysctlDeclared = z.infer<typeof SysctlDeclared>;

export function procPath(name: string): string {
  return `/proc/sys/${name.replaceAll(".", "/")}`;
}

/**
 * An extended regular expression for the persisted lines the parser may read a wanted key from
 * (a superset: the parser decides): for a snapshot every line but comments and blank ones, else
 * lines whose key, after leading `-` and blanks, is a declared name written with `.` or `/`.
 * The parser reads a key after blanks and one `-`: `[^A-Za-z0-9_#;]*` takes at least those.
 */
function persistedLines(names: readonly string[] | undefined): string {
  if (!names) return "^[[:space:]]*[^[:space:]#;]";
  const keys = names.map((name) => name.replaceAll(/[./]/g, "[./]"));
  return `^[^A-Za-z0-9_#;]*(${keys.join("|")})([^A-Za-z0-9_./-]|$)`;
}

// The shared awk's reading of the runtime files (`qm_v[1]`, space-separated) as `grep -H ''` prints
// them, the persisted files (`qm_v[5]` on) as `grep -H -n -E` would the lines matching `qm_v[4]`,
// each file named first, the btime line of /proc/stat, and the last audit (`qm_v[3]`). `qm_v[2]`
// holds the numbers, among the persisted files, of directories, which are not read.
const SYSCTL_AWK = [
  `function sysctl_mark(label) { printf "\\n%s mark %s\\n", qm_n, label }`,
  "function sysctl_read(  i, n, r, dir, k, l, f) {",
  `n = split(qm_v[1], r, " "); for (i = 1; i <= n; i++) { while ((getline l < r[i]) > 0) print r[i] ":" l; close(r[i]) }`,
  `sysctl_mark("persisted"); for (i = 5; i <= qm_vn; i++) print qm_v[i] ":"`,
  `n = split(qm_v[2], r, " "); for (i = 1; i <= n; i++) dir[r[i] + 4] = 1`,
  `for (i = 5; i <= qm_vn; i++) if (!(i in dir)) { f = qm_v[i]; k = 0; while ((getline l < f) > 0) if (++k && l ~ qm_v[4]) print f ":" k ":" l; close(f) }`,
  `sysctl_mark("boot"); while ((getline l < "/proc/stat") > 0) if (l ~ /^btime /) print l; close("/proc/stat")`,
  `sysctl_mark("audited"); if (qm_v[3] ~ /^[0-9]+$/) print qm_v[3] }`,
].join("\n");

export const sysctl: Domain<SysctlDeclared, SysctlLive, "sysctl"> = {
  name: "sysctl",
  specPath: ["system", "sysctl_parameters"],
  schema: SysctlDeclared,
  listForm: true,
  severity: "medium",
  onDrift: "accept",
  remediation:
    "Apply the manifest baseline with `sysctl -p` (or `sysctl --system`), or accept the live value into the manifest.",
  latentWords: {
    sentence: ({ key, latent }, q) =>
      `the next boot sets ${q(key)} to ${q(String(latent.becomes))}, as ${q(latent.because)} says: make that file set the declared value, or declare its value, before rebooting`,
    remediation: {
      reboot:
        "Make the sysctl.d (or sysctl.conf) line the next boot applies set the declared value, or remove it, before rebooting; or declare the value it sets.",
    },
  },
  awk: SYSCTL_AWK,
  probe(declared, ctx) {
    // Declared, the host sends only the declared keys; a snapshot takes every persisted one.
    const names = declared && Object.keys(declared);
    if (names?.length === 0) return "true";
    // The shared awk reads every declared /proc/sys file (getline: a single read() of each; dash's
    // `read` reads byte by byte, which /proc/sys answers wrongly), the persisted lines and the boot
    // time; a snapshot's recursive read of /proc/sys is grep's. awk is given no directory to read
    // (mawk's getline ends the program on one).
    const runtime = names ? names.map((name) => ctx.quote(procPath(name))).join(" ") : "";
    const persisted = PERSISTED_DIRS.map((d) => `${d}/*.conf`).join(" ");
    return [
      ctx.mark("runtime"),
      names
        ? `r=; for f in ${runtime}; do [ -f "$f" ] && r="$r $f"; done`
        : "r=; grep -H -s -r '' /proc/sys/net /proc/sys/fs /proc/sys/kernel /proc/sys/vm 2>/dev/null",
      // Every file is named (`file:`), setting anything or not, since a file masks a same-named
      // one in a later directory; then only lines that can set a wanted key, numbered (the
      // `because` of latent drift). `d` holds the argument numbers of directories.
      "set --; d=",
      `for f in /etc/sysctl.conf ${persisted}; do [ -e "$f" ] || continue; set -- "$@" "$f"; [ -d "$f" ] && d="$d $#"; done`,
      ctx.awk("sysctl_read", {
        values: ['"$r"', '"$d"', ctx.lastAudit, ctx.quote(persistedLines(names)), '"$@"'],
      }),
      // When each file changed, against the boot time: a persisted cause, or a runtime write. The
      // probe's one stat takes links as links: the parser reads a link's time from its target's
      // line. A dangling link is not asked for, as `sysctl --system` reads nothing from it.
      ctx.mark("changed"),
      ctx.awk("qm_stated", {
        values: [
          ctx.stat(
            `for f in /etc/sysctl.conf ${persisted}; do [ -e "$f" ] && set -- "$@" "$f"; done`,
          ),
        ],
      }),
    ].join("\n");
  },
  parse(output, ctx) {
    const parts = partsByLabel("sysctl", ctx.parts(output));
    const bootedAt = parseBootTime(parts.get("boot") ?? "");
    const audited = /^(\d{1,12})$/m.exec(parts.get("audited") ?? "")?.[1];
    return {
      ...(audited !== undefined && { auditedAt: Number(audited) }),
      runtime: parseRuntimeSysctl(parts.get("runtime") ?? ""),
      persisted: parsePersistedSysctl(parts.get("persisted") ?? ""),
      ...contentTimes(parseStated(parts.get("changed") ?? "")),
      ...(bootedAt !== undefined && { bootedAt }),
    };
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    for (const [name, want] of Object.entries(declared)) {
      const got = live.runtime.get(name) ?? null;
      const latent = bootLatent(live, name);
      // Clean now: a finding only when the next boot's sysctl pass sets another value.
      if (got === want && !latent) continue;
      const finding: Finding = {
        key: name,
        declared: want,
        live: got,
        path: pathIn(this, name),
      };
      if (latent) finding.latent = latent;
      const cause = got === want ? undefined : driftCause(live, name);
      if (cause) finding.cause = cause;
      if (got === null) finding.detail = `${procPath(name)} does not exist on this host`;
      // Nothing persists it: the live value may be the kernel's default, so nothing says it will
      // change at reboot.
      else if (!live.persisted.has(name))
        finding.detail =
          "no sysctl.conf or sysctl.d file sets it (the live value is the kernel default or a runtime change): " +
          "persist the declared value in sysctl.d to keep it across reboots";
      findings.push(finding);
    }
    return findings;
  },
  accept(declared, finding) {
    // Written as YAML writes numbers, so `somaxconn: 4096` becomes `somaxconn: 8192`, not a quoted
    // string.
    // Built by entries, never by assignment: a parameter named __proto__ stays a key.
    const live = String(finding.live);
    const value = /^-?\d{1,15}$/.test(live) ? Number(live) : live;
    const entries = Object.entries(declared).flatMap(([key, declaredValue]) =>
      key !== finding.key ? [[key, declaredValue]] : finding.live === null ? [] : [[key, value]],
    );
    if (finding.live !== null && !Object.hasOwn(declared, finding.key))
      entries.push([finding.key, value]);
    return Object.fromEntries(entries) as SysctlDeclared;
  },
  snapshot(live) {
    // A snapshot declares what the host persists, at its live values: the tunables an operator
    // chose. Names come from the host's files: built by entries, so `__proto__` stays a key.
    const entries = [...live.persisted.keys()].sort().flatMap((name) => {
      const value = live.runtime.get(name);
      return value === undefined ? [] : [[name, value] as const];
    });
    return entries.length ? Object.fromEntries(entries) : undefined;
  },
};
