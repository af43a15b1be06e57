// The packages an operator chose, as the host's package manager marks them: apt's manual marks (an
// installed package not marked Auto-Installed in /var/lib/apt/extended_states, as `apt-mark
// showmanual` reads it), dnf's user-installed packages (read as root only), apk's world file.
// Read by a snapshot only.
import { ProbeParseError } from "../../errors.js";
import { EFFECTIVE_UID } from "../domain.js";
import type { Chosen, PackageFormat, PackagesLive } from "./parse.js";

/** Labels of the probe parts that say which packages were chosen. */
export const CHOSEN_PARTS = {
  dpkg: "apt-auto",
  rpm: "dnf-userinstalled",
  apk: "apk-world",
  unknown: "chosen-unknown",
} as const;

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
    // As anyone but root, dnf makes itself a cache folder (/var/tmp/dnf-USER-*) whatever its
    // options say, so it is asked as root only; -C keeps it to the cache it has (it still writes
    // its logs and history database's files).
    rpm: [
      EFFECTIVE_UID,
      "if ! command -v dnf >/dev/null 2>&1; then",
      `  ${unknown("no dnf on this host to tell the packages installed on purpose")}`,
      'elif [ "$qm_u" != 0 ]; then',
      `  ${unknown("dnf writes a cache folder when not root: declare ssh: { become: sudo } for this node")}`,
      "else",
      `  ${mark(CHOSEN_PARTS.rpm)}`,
      `  dnf -q -C repoquery --userinstalled --qf '%{name}\\n' 2>/dev/null || ${unknown("dnf repoquery --userinstalled failed")}`,
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

/** A world file's or dnf's names: one a line; apk's constraints (`>=1.2`, `@tag`) taken off. */
function namesOf(text: string, live: PackagesLive): Set<string> {
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
  if (label === CHOSEN_PARTS.rpm || label === CHOSEN_PARTS.apk)
    return { names: namesOf(text, live) };
  throw new ProbeParseError("packages", `unexpected part "${label.slice(0, 80)}"`);
}
