import { z } from "zod";
import { keyedList, pathIn, within, type Domain, type Finding, type JsonValue } from "../domain.js";
import type { SpecPath } from "../../spec-path.js";
import { unifiedDiff, utf8Text } from "../file-text.js";
import { ManifestEditError } from "../../errors.js";
import { LINKED_COMPONENT, PRINT_LINK, linkedValue, type LinkedComponent } from "../no-follow.js";
import { parseSystemd, type SystemdLive, type UnitLive } from "./parse.js";

const UNIT_TYPES = [
  "service",
  "socket",
  "device",
  "mount",
  "automount",
  "swap",
  "target",
  "path",
  "timer",
  "slice",
  "scope",
];
const UnitName = z
  .string()
  .regex(
    new RegExp(`^[A-Za-z0-9:_.\\\\-]+(@[A-Za-z0-9:_.\\\\-]*)?\\.(${UNIT_TYPES.join("|")})$`),
    `a unit name ending in .${UNIT_TYPES.slice(0, 5).join(", .")}, ...`,
  );
// Checked per key here: zod reports a bad record key only as "Invalid key in record".
const Dropins = z.record(z.string(), z.string()).superRefine((dropins, ctx) => {
  for (const name of Object.keys(dropins)) {
    if (!/^[A-Za-z0-9:_.@-]+\.conf$/.test(name)) {
      ctx.addIssue({
        code: "custom",
        message: `${name}: a drop-in file name ending in .conf`,
        path: [name],
      });
    }
  }
});

export const UnitDeclared = z.strictObject({
  name: UnitName,
  enabled: z.boolean().optional(),
  active: z.boolean().optional(),
  /**
   * The unit file, compared with the one in effect (/etc/systemd/system first, then the vendor's).
   */
  contents: z.string().optional(),
  /** The complete set of drop-ins in /etc/systemd/system/<name>.d/: file name -> contents. */
  dropins: Dropins.optional(),
});
export type UnitDeclared = z.infer<typeof UnitDeclared>;

export const SystemdDeclared = keyedList(UnitDeclared, "name");
export type SystemdDeclared = z.infer<typeof SystemdDeclared>;

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
// `systemctl is-enabled` exits 0 for these states, and its exit status is what "enabled" means to
// systemd.
const ENABLED_STATES = new Set([
  "enabled",
  "enabled-runtime",
  "alias",
  "static",
  "indirect",
  "generated",
  "transient",
]);
const NO_SYSTEMD =
  "systemd is not running on this host (no /run/systemd/system): active state unknown";
const ACTIVE_STATES = new Set(["active", "reloading"]);

/**
 * The unit files a unit is read from: its own, and for `foo@bar.service` its template
 * `foo@.service`.
 */
function unitFileNames(name: string): string[] {
  const m = /^([^@]+@)[^@]+(\.[a-z]+)$/.exec(name);
  return m ? [name, `${m[1]}${m[2]}`] : [name];
}

/** Where the drop-ins of a unit live: every *.conf in it changes the unit. */
const dropinDir = (name: string) => `/etc/systemd/system/${name}.d`;

/**
 * A unit or drop-in as a report shows it: its text, or a summary when it is not text within the
 * cap.
 */
function shown(bytes: Buffer, cap: number): { text?: string; value: string } {
  if (bytes.length > cap) return { value: `<over the ${cap}-byte cap, not read>` };
  const text = utf8Text(bytes);
  return text === undefined ? { value: `<binary, ${bytes.length} bytes>` } : { text, value: text };
}

/** A unit file or drop-in reached through a symlink: not followed, so nothing to compare. */
function linkFinding(
  key: string,
  path: SpecPath,
  want: string | null,
  link: LinkedComponent,
): Finding {
  return {
    key,
    declared: want,
    live: linkedValue(link),
    path,
    detail: `${link.component} is a symlink: not followed, nothing behind it read`,
  };
}

function textFinding(
  key: string,
  path: SpecPath,
  want: string,
  got: Buffer,
  cap: number,
  detail: string,
): Finding | undefined {
  if (got.equals(Buffer.from(want, "utf8"))) return undefined;
  const live = shown(got, cap);
  return {
    key,
    declared: want,
    live: live.value,
    path,
    detail,
    ...(live.text !== undefined ? { diff: unifiedDiff(want, live.text) } : {}),
  };
}

/**
 * A declaration asking only that a unit be disabled or stopped holds for a unit that does not
 * exist.
 */
function needsUnit(unit: UnitDeclared): boolean {
  const onlyOff =
    unit.enabled !== true &&
    unit.active !== true &&
    (unit.enabled === false || unit.active === false);
  return !onlyOff || unit.contents !== undefined || Object.keys(unit.dropins ?? {}).length > 0;
}

function enabledDetail(unit: UnitLive, name: string): string {
  if (unit.masked) return `masked: ${name} links to /dev/null`;
  if (unit.wantedBy.length) return `enabled by ${unit.wantedBy.join(", ")}`;
  return "no symlink to it in a *.wants or *.requires directory of /etc/systemd/system or the vendor's";
}

/** A unit systemd knows of: a unit file, a mask, or a load state other than not-found. */
function unitExists(got: UnitLive): boolean {
  return (
    got.file !== undefined ||
    got.masked ||
    (got.state !== undefined && got.state.load !== "not-found")
  );
}

/** A declared unit the host has no trace of. */
function missingUnit(name: string, base: SpecPath): Finding {
  return {
    key: name,
    declared: "present",
    live: null,
    path: base,
    detail:
      "no unit file in /etc/systemd/system, /usr/lib/systemd/system or another unit directory",
  };
}

/** Whether the unit is enabled and active as declared. */
function stateFindings(unit: UnitDeclared, got: UnitLive, base: SpecPath): Finding[] {
  const findings: Finding[] = [];
  const finding = (attribute: string, want: JsonValue, have: JsonValue, detail: string) =>
    findings.push({
      key: `${unit.name}:${attribute}`,
      declared: want,
      live: have,
      path: [...base, attribute],
      detail,
    });
  if (unit.enabled !== undefined) {
    // A running systemd answers for itself; without one, the enablement symlinks on disk do.
    const state = got.enabledState;
    const enabled = state ? ENABLED_STATES.has(state) : !got.masked && got.wantedBy.length > 0;
    const detail = state ? `systemctl is-enabled: ${state}` : enabledDetail(got, unit.name);
    if (enabled !== unit.enabled) finding("enabled", unit.enabled, enabled, detail);
  }
  if (unit.active !== undefined && got.state) {
    const active = ACTIVE_STATES.has(got.state.active);
    if (active !== unit.active)
      finding(
        "active",
        unit.active,
        active,
        `ActiveState=${got.state.active} SubState=${got.state.sub}`,
      );
  }
  return findings;
}

/** The unit file in effect against the declared contents. */
function contentsFindings(
  unit: UnitDeclared,
  got: UnitLive,
  base: SpecPath,
  cap: number,
): Finding[] {
  if (unit.contents === undefined) return [];
  const key = `${unit.name}:contents`;
  const path = [...base, "contents"];
  if (got.link) return [linkFinding(key, path, unit.contents, got.link)];
  if (!got.contents) return [];
  const drift = textFinding(key, path, unit.contents, got.contents, cap, `in effect: ${got.file}`);
  return drift ? [drift] : [];
}

/**
 * The drop-ins in effect against the declared set: linked ones, declared ones missing or
 * different, and those the manifest does not declare.
 */
function dropinFindings(
  name: string,
  dropins: Record<string, string>,
  got: UnitLive,
  base: SpecPath,
  live: SystemdLive,
): Finding[] {
  const folderLink = got.dropinsLink;
  if (folderLink) {
    // Nothing in a linked drop-in folder was listed: each declared drop-in is in question.
    const files = Object.keys(dropins);
    return (files.length ? files : ["*"]).map((file) =>
      linkFinding(
        `${name}.d/${file}`,
        [...base, "dropins", file],
        dropins[file] ?? null,
        folderLink,
      ),
    );
  }
  const linked = [...got.dropinLinks].map(([file, link]) => {
    const want = Object.hasOwn(dropins, file) ? dropins[file]! : null;
    return linkFinding(`${name}.d/${file}`, [...base, "dropins", file], want, link);
  });
  return [
    ...linked,
    ...declaredDropinFindings(name, dropins, got, base, live),
    ...undeclaredDropinFindings(name, dropins, got, base, live.cap),
  ];
}

/** Each declared drop-in that is not a symlink, missing or different on the host. */
function declaredDropinFindings(
  name: string,
  dropins: Record<string, string>,
  got: UnitLive,
  base: SpecPath,
  live: SystemdLive,
): Finding[] {
  const dir = dropinDir(name);
  const findings: Finding[] = [];
  for (const [file, want] of Object.entries(dropins)) {
    const key = `${name}.d/${file}`;
    const path = [...base, "dropins", file];
    const have = got.dropins.get(file);
    if (got.dropinLinks.has(file)) continue;
    if (have === undefined) {
      if (live.unknown.some((u) => u.includes(`${dir}/${file}`))) continue;
      findings.push({
        key,
        declared: want,
        live: null,
        path,
        detail: `${dir}/${file} does not exist`,
        diff: unifiedDiff(want, ""),
      });
      continue;
    }
    const drift = textFinding(key, path, want, have, live.cap, `${dir}/${file}`);
    if (drift) findings.push(drift);
  }
  return findings;
}

/** Each drop-in on the host that the manifest does not declare: it changes the unit all the same. */
function undeclaredDropinFindings(
  name: string,
  dropins: Record<string, string>,
  got: UnitLive,
  base: SpecPath,
  cap: number,
): Finding[] {
  const dir = dropinDir(name);
  return [...got.dropins]
    .filter(([file]) => !Object.hasOwn(dropins, file)) // a host's file name, never Object.prototype's
    .map(([file, have]) => {
      const value = shown(have, cap);
      return {
        key: `${name}.d/${file}`,
        declared: null,
        live: value.value,
        path: [...base, "dropins", file],
        detail: `${dir}/${file} is not in the manifest and changes the unit`,
        ...(value.text !== undefined ? { diff: unifiedDiff("", value.text) } : {}),
      };
    });
}

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
  probe(declared, ctx) {
    if (!declared?.length) return ctx.mark(`cap ${ctx.maxFileBytes}`); // a snapshot: an empty but well-formed section
    const q = ctx.quote;
    const read = (path: string, name: string) =>
      `head -c ${ctx.maxFileBytes + 1} -- "${path}" 2>/dev/null || { ${ctx.mark(`unreadable ${name}`)}; printf '%s\\n' "${path}"; }`;
    const lines = [ctx.mark(`cap ${ctx.maxFileBytes}`)];
    // Enabled state and files come from the file system, which needs no running systemd;
    // only the active state needs systemctl, in one call for every unit that declares it.
    const withActive = declared.filter((u) => u.active !== undefined).map((u) => u.name);
    if (withActive.length) {
      lines.push(
        "if [ -d /run/systemd/system ]; then",
        `  ${ctx.mark(`active ${withActive.join(" ")}`)}`,
        `  systemctl show -p LoadState,ActiveState,SubState -- ${withActive.map(q).join(" ")} 2>&1`,
        "else",
        `  ${ctx.mark("active-unknown")}`,
        `  printf '%s\\n' ${q(NO_SYSTEMD)}`,
        "fi",
      );
    }
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
      const base = pathIn(this, unit.name);
      if (!unitExists(got)) return needsUnit(unit) ? [missingUnit(unit.name, base)] : [];
      return [
        ...stateFindings(unit, got, base),
        ...contentsFindings(unit, got, base, live.cap),
        ...(unit.dropins === undefined
          ? []
          : dropinFindings(unit.name, unit.dropins, got, base, live)),
      ];
    });
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
