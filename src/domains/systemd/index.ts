import { pathIn, within, type Domain } from "../domain.js";
import { ManifestEditError } from "../../errors.js";
import { LINKED_COMPONENT, PRINT_LINK } from "../no-follow.js";
import { enablementCause, enablementRecords, replacedLibraryCause } from "./cause.js";
import { unitFindings } from "./compare.js";
import { dropinDir, SystemdDeclared, unitFileNames } from "./declared.js";
import { splitLatentKey } from "./latent.js";
import { mapsProbe } from "./maps.js";
import { parseSystemd, type SystemdLive } from "./parse.js";

export { SystemdDeclared, UnitDeclared } from "./declared.js";

/** systemd's unit search order, highest priority first. */
const UNIT_DIRS = [
  "/run/systemd/generator.early",
  "/etc/systemd/system",
  "/run/systemd/system",
  "/run/systemd/generator",
  "/usr/local/lib/systemd/system",
  "/usr/lib/systemd/system",
  "/lib/systemd/system",
  "/run/systemd/generator.late",
];
// Where enablement symlinks live, the admin's before the vendor's; /lib is often a link to
// /usr/lib.
const WANTS_DIRS = [
  "/etc/systemd/system",
  "/run/systemd/system",
  "/usr/local/lib/systemd/system",
  "/usr/lib/systemd/system",
];
// NeedDaemonReload and the start time tell a unit whose files changed since it was loaded or
// started (its EnvironmentFiles too, which systemd reads at each start), MainPID and ControlGroup
// its processes, whose maps tell a deleted library (latent drift).
const SHOWN = [
  "LoadState",
  "ActiveState",
  "SubState",
  "NeedDaemonReload",
  "ActiveEnterTimestampMonotonic",
  "MainPID",
  "ControlGroup",
  "EnvironmentFiles",
];
// The mtimes of the EnvironmentFiles systemctl named (`EnvironmentFiles=PATH (ignore_errors=no)`,
// a line each), shell builtins and one stat. Not indented: the here-document's lines start the line.
const ENVIRONMENT_FILES = (mark: string) => [
  "set --",
  "while IFS= read -r qm_line; do",
  '  case $qm_line in EnvironmentFiles=/*) qm_p=${qm_line#EnvironmentFiles=}; set -- "$@" "${qm_p% (ignore_errors=*)}" ;; esac',
  "done <<QM_ENV",
  "$qm_show",
  "QM_ENV",
  `[ $# -eq 0 ] || { ${mark}; stat -c '%Y %n' -- "$@" 2>/dev/null; }`,
];
const NO_SYSTEMD =
  "systemd is not running on this host (no /run/systemd/system): active state unknown";

export const systemd: Domain<SystemdDeclared, SystemdLive, "systemd"> = {
  name: "systemd",
  specPath: ["systemd", "units"],
  schema: SystemdDeclared,
  listKey: "name",
  snapshotsDeclared: true,
  severity: "high",
  onDrift: "accept",
  remediation:
    "Restore the unit from the manifest and `systemctl daemon-reload`, or accept the live unit.",
  latentWords: {
    sentence: ({ key, latent }, q) => {
      const [unit, what] = splitLatentKey(key);
      if (what === "libraries")
        return `a restart of ${q(unit)} loads the replaced ${q(latent.because)}`;
      if (what === "running")
        return `a restart of ${q(unit)} runs its files as they changed since it started (${q(latent.because)})`;
      if (what === "loaded")
        return `the next daemon-reload loads ${q(unit)} from its changed files (${q(latent.because)})`;
      return undefined;
    },
    remediation: {
      restart:
        "Restart the unit (`systemctl restart`) when its users can take it: it then runs the files and libraries on disk.",
      "daemon-reload":
        "Run `systemctl daemon-reload` so systemd loads the unit as its files say now, then restart it for its process to take them; or put the files back.",
    },
  },
  probe(declared, ctx) {
    if (!declared?.length) return ctx.mark(`cap ${ctx.maxFileBytes}`); // a snapshot: an empty but well-formed section
    const q = ctx.quote;
    const read = (path: string, name: string) =>
      `head -c ${ctx.maxFileBytes + 1} -- "${path}" 2>/dev/null || { ${ctx.mark(`unreadable ${name}`)}; printf '%s\\n' "${path}"; }`;
    const lines = [ctx.mark(`cap ${ctx.maxFileBytes}`)];
    // Enabled state and files come from the file system, which needs no running systemd; the
    // active state and what systemd loaded need systemctl, in one call for every declared unit.
    const names = declared.map((u) => u.name);
    const withActive = declared.some((u) => u.active !== undefined);
    lines.push(
      "if [ -d /run/systemd/system ]; then",
      `  ${ctx.mark(`active ${names.join(" ")}`)}`,
      `  qm_show=$(systemctl show -p ${SHOWN.join(",")} -- ${names.map(q).join(" ")} 2>&1)`,
      `  printf '%s\\n' "$qm_show"`,
      `  ${ctx.mark("boot")}; grep -s '^btime ' /proc/stat`,
      ...ENVIRONMENT_FILES(ctx.mark("environment")),
      // Not indented: its here-documents' lines must start the line.
      ...mapsProbe(ctx.mark, q),
      ...(withActive
        ? ["else", `  ${ctx.mark("active-unknown")}`, `  printf '%s\\n' ${q(NO_SYSTEMD)}`]
        : []),
      "fi",
    );
    lines.push(LINKED_COMPONENT);
    for (const unit of declared) {
      const candidates = unitFileNames(unit.name).flatMap((n) =>
        UNIT_DIRS.map((d) => q(`${d}/${n}`)),
      );
      const name = q(unit.name);
      lines.push(
        ctx.mark(`unit ${unit.name}`),
        `{ [ -c /etc/systemd/system/${name} ] || [ -c /run/systemd/system/${name} ]; } && echo masked`,
        `for qm_p in ${WANTS_DIRS.flatMap((d) => [`${d}/*.wants/${name}`, `${d}/*.requires/${name}`]).join(" ")}; do`,
        `  [ -L "$qm_p" ] && printf 'wanted-by %s\\n' "$qm_p"`,
        "done",
        ...(unit.enabled === undefined
          ? []
          : [
              `[ -d /run/systemd/system ] && printf 'is-enabled %s\\n' "$(systemctl is-enabled -- ${name} 2>/dev/null)"`,
            ]),
        // The first file or symlink in search order, a mask (a link to /dev/null) aside.
        `qm_f=; for qm_p in ${candidates.join(" ")}; do if { [ -f "$qm_p" ] || [ -h "$qm_p" ]; } && [ ! -c "$qm_p" ]; then qm_f=$qm_p; break; fi; done`,
        `[ -n "$qm_f" ] && printf 'file %s\\n' "$qm_f"`,
        // A symlink on its way, the file itself included, is reported and never followed.
        `qm_l=; [ -n "$qm_f" ] && qm_linked "$qm_f" && { qm_l=1; ${ctx.mark(`unit-link ${unit.name}`)}; ${PRINT_LINK}; }`,
        // When its files last changed, against when it was loaded and started: latent drift.
        `if [ -d /run/systemd/system ] && [ -n "$qm_f" ]; then ${ctx.mark(`changed ${unit.name}`)}; stat -c '%Y %n' -- "$qm_f" 2>/dev/null; qm_linked ${q(dropinDir(unit.name))} || stat -c '%Y %n' -- ${q(dropinDir(unit.name))}/*.conf 2>/dev/null; fi`,
      );
      if (unit.contents !== undefined) {
        lines.push(
          `if [ -n "$qm_f" ] && [ -z "$qm_l" ]; then ${ctx.mark(`unit-file ${unit.name}`)}; ${read("$qm_f", unit.name)}; fi`,
        );
      }
      if (unit.dropins !== undefined) {
        const dir = dropinDir(unit.name);
        lines.push(
          `if qm_linked ${q(dir)}; then ${ctx.mark(`dropins-link ${unit.name}`)}; ${PRINT_LINK}; else`,
          `for qm_p in ${q(dir)}/*.conf; do`,
          `  if [ -h "$qm_p" ]; then`,
          `    ${ctx.mark(`dropin-link ${unit.name}`)}; printf '%s\\n%s\\n' "\${qm_p##*/}" "$qm_p"; readlink -- "$qm_p"`,
          `    continue`,
          `  fi`,
          `  [ -f "$qm_p" ] || continue`,
          `  ${ctx.mark(`dropin ${unit.name}`)}; printf '%s\\n' "\${qm_p##*/}"`,
          `  ${read("$qm_p", unit.name)}`,
          "done; fi",
        );
      }
    }
    lines.push("true");
    return lines.join("\n");
  },
  parse(output, ctx) {
    return parseSystemd(ctx.parts(output));
  },
  compare(declared, live) {
    return declared.flatMap((unit) => {
      const got = live.units.get(unit.name);
      if (!got) return [];
      return unitFindings(unit, got, pathIn(this, unit.name), live);
    });
  },
  records: enablementRecords,
  cause: enablementCause,
  latentCause: replacedLibraryCause,
  snapshotAsks(declared) {
    // A unit declared by name alone (`adopt --units`): a guess at each attribute, which accepting
    // the live state then corrects.
    return declared.map((unit) =>
      Object.keys(unit).some((k) => k !== "name")
        ? unit
        : { ...unit, enabled: false, active: false, contents: "", dropins: {} },
    );
  },
  accept(declared, finding) {
    const [name, attribute, dropin] = within(this, finding.path) as [
      string,
      string | undefined,
      string | undefined,
    ];
    // A unit that does not exist leaves the manifest.
    if (attribute === undefined) return declared.filter((unit) => unit.name !== name);
    // Text is accepted only when the audit read it: a summary such as "<binary, 12 bytes>" is no
    // unit file.
    if (
      (attribute === "contents" || dropin !== undefined) &&
      finding.live !== null &&
      finding.diff === undefined
    ) {
      throw new ManifestEditError(
        `the live ${finding.key} (${String(finding.live)}) cannot be written into the manifest`,
      );
    }
    return declared.map((unit) => {
      if (unit.name !== name) return unit;
      if (dropin === undefined) return { ...unit, [attribute]: finding.live };
      // Built by entries: a drop-in name comes from the host and must stay a key.
      const entries = Object.entries(unit.dropins ?? {}).filter(
        ([file]) => finding.live !== null || file !== dropin,
      );
      if (finding.live !== null) entries.push([dropin, String(finding.live)]);
      return { ...unit, dropins: Object.fromEntries(new Map(entries)) };
    });
  },
  snapshot() {
    // Units are audited only where declared: a host has nothing to offer unasked.
    return undefined;
  },
  watchTargets(declared) {
    return {
      paths: declared.flatMap((unit) =>
        unitFileNames(unit.name).flatMap((name) => UNIT_DIRS.map((dir) => `${dir}/${name}`)),
      ),
      directories: declared.map((unit) => dropinDir(unit.name)),
      // Unit files and drop-ins are watched; enablement links and the running state are not.
      polled: declared.some((unit) => unit.enabled !== undefined || unit.active !== undefined),
    };
  },
};
