import type { Finding, JsonValue } from "../domain.js";
import type { SpecPath } from "../../spec-path.js";
import { unifiedDiff, utf8Text } from "../file-text.js";
import { linkedValue, type LinkedComponent } from "../no-follow.js";
import { dropinDir, type UnitDeclared } from "./declared.js";
import { unitLatent } from "./latent.js";
import { ACTIVE_STATES, type SystemdLive, type UnitLive } from "./parse.js";

// A declared unit against the host: existence, enabled and active state, unit file, drop-ins.

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

/** Every finding for one declared unit the probe reported on. */
export function unitFindings(
  unit: UnitDeclared,
  got: UnitLive,
  base: SpecPath,
  live: SystemdLive,
): Finding[] {
  if (!unitExists(got)) return needsUnit(unit) ? [missingUnit(unit.name, base)] : [];
  return [
    ...stateFindings(unit, got, base),
    ...contentsFindings(unit, got, base, live.cap),
    ...(unit.dropins === undefined ? [] : dropinFindings(unit.name, unit.dropins, got, base, live)),
    ...unitLatent(unit.name, got, base, live.bootedAt),
  ];
}
