// The packages an operator chose, as the host's package manager marks them: apt's manual marks (an
// installed package not marked Auto-Installed in /var/lib/apt/extended_states, as `apt-mark
// showmanual` reads it), dnf's user-installed packages (read from dnf's history database, as `dnf
// repoquery --userinstalled` reads it), apk's world file. Read by a snapshot only.
import { ProbeParseError } from "../../errors.js";
import type { Chosen, PackageFormat, PackagesLive } from "./parse.js";

/** Labels of the probe parts that say which packages were chosen. */
export const CHOSEN_PARTS = {
  dpkg: "apt-auto",
  rpm: "dnf-history",
  dnf5: "dnf5-state",
  apk: "apk-world",
  unknown: "chosen-unknown",
} as const;

const DNF_HISTORY = "/var/lib/dnf/history.sqlite";
/** dnf 5's system state (libdnf5 `system_state_dir`): TOML files, one per kind of record. */
const DNF5_STATE = "/usr/lib/sysimage/libdnf5";

/**
 * For every package (name and architecture) dnf 4's history database has a record of, the reason
 * libdnf resolves for it (`RPMItem::resolveTransactionItemReason`, libdnf 0.69): its query, run by
 * the host's own SQLite so that ties between items of one transaction fall as they do for dnf. A
 * removal as the latest record reads as unknown (0). Lines: name, arch, reason, tab-separated. No
 * single quote, for the shell's quoting.
 */
const DNF_REASONS_PY = [
  "import sqlite3, sys",
  `db = sqlite3.connect("file:${DNF_HISTORY}?mode=ro&immutable=1", uri=True)`,
  'q = "SELECT ti.action AS action, ti.reason AS reason FROM trans_item ti JOIN trans t ON ti.trans_id = t.id JOIN rpm i USING (item_id) WHERE t.state = 1 AND ti.action not in (3, 5, 7, 10) AND i.name = ? AND i.arch = ? ORDER BY ti.trans_id DESC LIMIT 1"',
  'for name, arch in db.execute("SELECT DISTINCT name, arch FROM rpm").fetchall():',
  "    row = db.execute(q, (name, arch)).fetchone()",
  "    if row:",
  '        sys.stdout.write("%s\\t%s\\t%d\\n" % (name, arch, 0 if row[0] == 8 else row[1]))',
].join("\n");

/** The shell that prints the chosen part for a package database, its marker first. */
export function chosenProbe(mark: (label: string) => string): Record<PackageFormat, string> {
  const unknown = (reason: string) => `{ ${mark(CHOSEN_PARTS.unknown)}; echo '${reason}'; }`;
  return {
    // No extended_states: apt has marked nothing automatic, and every package is manual.
    dpkg: [
      `${mark(CHOSEN_PARTS.dpkg)}`,
      "if [ -e /var/lib/apt/extended_states ]; then",
      `  grep -E '^(Package|Architecture|Auto-Installed):' /var/lib/apt/extended_states || [ $? -eq 1 ] || ${unknown("cannot read /var/lib/apt/extended_states")}`,
      "fi",
    ].join("\n"),
    // dnf itself is never run: even `dnf -q -C repoquery` writes its logs, its history database
    // and a lock as root, and a cache folder under /var/tmp as anyone else. Its history database
    // is read instead, immutable (no lock, no -wal or -shm file), by the Python dnf runs on.
    // dnf 5 keeps each package's reason in packages.toml and the packages its groups installed in
    // groups.toml: both are printed, and read alike (neither holds the other's lines). With no
    // package recorded in nevras.toml, dnf 5 takes its state from dnf 4's history on its next run.
    rpm: [
      `if [ -d ${DNF5_STATE} ]; then`,
      `  if ! grep -qs from_repo ${DNF5_STATE}/nevras.toml; then`,
      `    ${unknown(`dnf 5 has recorded no package in ${DNF5_STATE} yet`)}`,
      `  elif [ -e ${DNF5_STATE}/packages.toml ] && [ ! -r ${DNF5_STATE}/packages.toml ]; then`,
      `    ${unknown(`cannot read ${DNF5_STATE}/packages.toml`)}`,
      "  else",
      `    ${mark(CHOSEN_PARTS.dnf5)}`,
      `    cat ${DNF5_STATE}/packages.toml ${DNF5_STATE}/groups.toml 2>/dev/null`,
      "  fi",
      `elif [ -e ${DNF_HISTORY} ] && [ ! -r ${DNF_HISTORY} ]; then`,
      `  ${unknown(`cannot read ${DNF_HISTORY}: declare ssh: { become: sudo } for this node`)}`,
      `elif [ -e ${DNF_HISTORY} ]; then`,
      "  qm_py=python3; [ -x /usr/libexec/platform-python ] && qm_py=/usr/libexec/platform-python",
      `  ${mark(CHOSEN_PARTS.rpm)}`,
      `  "$qm_py" -I -B -c '${DNF_REASONS_PY}' </dev/null 2>/dev/null || ${unknown(`cannot read ${DNF_HISTORY} with the sqlite3 module of python3`)}`,
      // dnf without a history database has recorded no reason: it counts every package as chosen.
      "elif command -v dnf >/dev/null 2>&1; then",
      `  ${mark(CHOSEN_PARTS.rpm)}`,
      "else",
      `  ${unknown("no dnf on this host to tell the packages installed on purpose")}`,
      "fi",
    ].join("\n"),
    apk: [
      `${mark(CHOSEN_PARTS.apk)}`,
      `cat /etc/apk/world 2>/dev/null || ${unknown("cannot read /etc/apk/world")}`,
    ].join("\n"),
  };
}

/**
 * apt's automatic marks over the installed packages: a package is chosen when one of its installed
 * instances is not marked Auto-Installed for its architecture (an `all` package is marked under
 * the host's own).
 */
function aptChosen(text: string, live: PackagesLive): Set<string> {
  const auto = new Map<string, Set<string>>();
  let current: { name: string; arch?: string; auto?: boolean } | undefined;
  const finish = () => {
    if (!current?.auto) return;
    const arches = auto.get(current.name) ?? new Set();
    auto.set(current.name, arches.add(current.arch ?? ""));
  };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const m = /^(Package|Architecture|Auto-Installed): ?(.*)$/.exec(line);
    if (!m)
      throw new ProbeParseError(
        "packages",
        `unexpected extended_states line "${line.slice(0, 80)}"`,
      );
    if (m[1] === "Package") {
      finish();
      current = { name: m[2]! };
    } else if (current && m[1] === "Architecture") current.arch = m[2]!;
    else if (current) current.auto = m[2] === "1";
  }
  finish();
  const chosen = new Set<string>();
  for (const [name, instances] of live.installed) {
    const marked = auto.get(name);
    if (!marked || instances.some((i) => i.arch !== "all" && !marked.has(i.arch))) chosen.add(name);
  }
  return chosen;
}

/** dnf 4's reasons (`TransactionItemReason`) that `dnf repoquery --userinstalled` counts as chosen. */
const DNF_CHOSEN_REASONS = new Set(["0", "2"]); // unknown, user

/**
 * dnf 4's rule (`history.user_installed`): an installed package is chosen when its reason is user
 * or unknown (no record: installed by rpm alone, or removed by dnf since); a dependency, a weak
 * dependency, a group's package or a cleaned one is not. A name is chosen when one of its
 * installed instances is.
 */
function dnfChosen(text: string, live: PackagesLive): Set<string> {
  const reasons = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const m = /^([^\t]+\t[^\t]+)\t(\d+)$/.exec(line);
    if (!m)
      throw new ProbeParseError("packages", `unexpected dnf history line "${line.slice(0, 80)}"`);
    reasons.set(m[1]!, m[2]!);
  }
  const chosen = new Set<string>();
  for (const [name, instances] of live.installed) {
    const reasonOf = (arch: string) => reasons.get(`${name}\t${arch}`) ?? "0";
    if (instances.some((i) => DNF_CHOSEN_REASONS.has(reasonOf(i.arch)))) chosen.add(name);
  }
  return chosen;
}

/**
 * dnf 5's rule (`PackageQuery::filter_userinstalled`, `State::get_package_reason`): an installed
 * package is chosen unless packages.toml marks it a dependency or a weak dependency and no group in
 * groups.toml installed it (that makes it a group's, which dnf 5 counts as chosen). No record is
 * an external install, chosen too. A name is chosen when one of its installed instances is.
 */
function dnf5Chosen(text: string, live: PackagesLive): Set<string> {
  // packages.toml: `"name.arch" = {reason="Dependency"}` (spaced or not, by toml11's version).
  const dependencies = new Set<string>();
  for (const line of text.split("\n")) {
    const m =
      /^[ \t]*"([^"]+)"[ \t]*=[ \t]*\{[ \t]*reason[ \t]*=[ \t]*"([^"]*)"[ \t]*\}[ \t]*$/.exec(line);
    if (m && (m[2] === "Dependency" || m[2] === "Weak Dependency")) dependencies.add(m[1]!);
  }
  // groups.toml: each group's `packages = ["a", "b"]`, on one line or several. An array ends at
  // its `]`, or at the next `[` if the host's text has none: each character is read once.
  const ofGroups = new Set<string>();
  for (const m of text.matchAll(/\bpackages[ \t]*=[ \t]*\[([^[\]]*)\]/g))
    for (const name of m[1]!.matchAll(/"([^"\n]*)"/g)) ofGroups.add(name[1]!);
  const chosen = new Set<string>();
  for (const [name, instances] of live.installed) {
    const dependency = (arch: string) => dependencies.has(`${name}.${arch}`) && !ofGroups.has(name);
    if (instances.some((i) => !dependency(i.arch))) chosen.add(name);
  }
  return chosen;
}

/** A world file's names: one a line; apk's constraints (`>=1.2`, `@tag`) taken off. */
function apkChosen(text: string, live: PackagesLive): Set<string> {
  const chosen = new Set<string>();
  for (const word of text.split(/\s+/)) {
    // `!name` in apk's world forbids a package; it chose nothing.
    if (!word || word.startsWith("!")) continue;
    const name = word.replace(/[<>=~@].*$/, "");
    if (live.installed.has(name)) chosen.add(name);
  }
  return chosen;
}

/** The chosen packages from the probe's part, read against the installed ones. */
export function parseChosen(label: string, text: string, live: PackagesLive): Chosen {
  if (label === CHOSEN_PARTS.unknown) return { unknown: text.trim().slice(0, 200) };
  if (label === CHOSEN_PARTS.dpkg) return { names: aptChosen(text, live) };
  if (label === CHOSEN_PARTS.rpm) return { names: dnfChosen(text, live) };
  if (label === CHOSEN_PARTS.dnf5) return { names: dnf5Chosen(text, live) };
  if (label === CHOSEN_PARTS.apk) return { names: apkChosen(text, live) };
  throw new ProbeParseError("packages", `unexpected part "${label.slice(0, 80)}"`);
}
