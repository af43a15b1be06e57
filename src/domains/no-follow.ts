// Declared paths are looked at without following a symlink at any component, parents included: a
// folder an app user owns, swapped for a link to a root-only folder, must not lead the probe (run
// with `become: sudo`) into reading what is behind it. Shell builtins only, so it costs no process
// and behaves the same under dash, bash and busybox ash.

/**
 * `qm_linked PATH`: true when a component of PATH (the last one included) is a symlink, the first
 * such component then in `$qm_link`. PATH holds no `..` (declared paths cannot); an empty or `.`
 * component re-tests a folder already tested.
 */
export const LINKED_COMPONENT = [
  "qm_linked() {",
  "  qm_link=; qm_rest=${1#/}",
  '  while [ -n "$qm_rest" ]; do',
  "    qm_link=$qm_link/${qm_rest%%/*}",
  "    case $qm_rest in */*) qm_rest=${qm_rest#*/} ;; *) qm_rest= ;; esac",
  '    [ -h "$qm_link" ] && return 0',
  "  done",
  "  return 1",
  "}",
].join("\n");

/** Prints the linked component found by qm_linked, then its own target (never followed). */
export const PRINT_LINK = `printf '%s\\n' "$qm_link"; readlink -- "$qm_link"`;

/** The path the kernel names an opened file by: no `//`, no `.` component, no trailing `/`. */
export function canonicalPath(path: string): string {
  return `/${path
    .split("/")
    .filter((part) => part !== "" && part !== ".")
    .join("/")}`;
}

/** A symlink found on the way to a declared path: where it is, and its own target text. */
export interface LinkedComponent {
  component: string;
  target: string;
}

/** A linked component as the probe printed it (PRINT_LINK): the component, then its target. */
export function parseLink(text: string): LinkedComponent {
  const nl = text.indexOf("\n");
  const target = nl === -1 ? "" : text.slice(nl + 1);
  return {
    component: nl === -1 ? text : text.slice(0, nl),
    target: target.endsWith("\n") ? target.slice(0, -1) : target,
  };
}

/** How a report shows a path reached through a symlink it did not follow. */
export function linkedValue(link: LinkedComponent): string {
  return `symlink ${link.component} -> ${link.target}`;
}
