import type { ProbeContext } from "../domain.js";
import { LINKED_COMPONENT, PRINT_LINK } from "../no-follow.js";

// The certificates section: each declared path looked at without following a symlink, the files
// of a declared folder listed with shell builtins, then one `find` (files over the cap) and one
// `awk` reading every file. Only the base64 lines of PEM CERTIFICATE blocks leave the host: a
// private key is told by its BEGIN line, and nothing of it is sent.

/** Most files of one declared folder read; the rest are counted. */
export const MAX_FOLDER_FILES = 500;
/** Most certificates read from one file (a CA bundle holds about 150). */
export const MAX_FILE_CERTIFICATES = 1000;
/** The names a folder's certificate files go by. */
export const CERTIFICATE_FILE = "*.pem|*.crt|*.cer";

/**
 * Prints, for each file of "$@": a `file F` mark then its certificate blocks (BEGIN, base64 lines,
 * END), or instead `over F` (past the cap, or named by find on stdin as larger), `unreadable F`,
 * `private F` (a private key's BEGIN line: the file is not read further). Files are read with
 * getline in BEGIN, so an unreadable one cannot end the program.
 */
const READ_AWK = String.raw`
function mark(label) { printf "\n%s mark %s\n", qm_n, label }
BEGIN {
  while ((getline qm_l < "/dev/stdin") > 0) qm_big[qm_l] = 1
  for (qm_i = 1; qm_i < ARGC; qm_i++) {
    qm_f = ARGV[qm_i]
    if (qm_f in qm_big) { mark("over " qm_f); continue }
    qm_b = 0; qm_in = 0; qm_c = 0; qm_state = ""
    qm_r = (getline qm_l < qm_f)
    if (qm_r < 0) { mark("unreadable " qm_f); continue }
    mark("file " qm_f)
    while (qm_r > 0) {
      qm_b += length(qm_l) + 1
      if (qm_b > qm_cap || qm_c > qm_max) { qm_state = "over"; break }
      sub(/\r$/, "", qm_l)
      if (qm_l ~ /^-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----/) { qm_state = "private"; break }
      if (qm_in) {
        if (qm_l == "-----END CERTIFICATE-----") { print qm_l; qm_in = 0 }
        else if (qm_l ~ /^[A-Za-z0-9+\/=]*$/) print qm_l
        else { print "-----END CERTIFICATE-----"; qm_in = 0 }
      } else if (qm_l == "-----BEGIN CERTIFICATE-----") { print qm_l; qm_in = 1; qm_c++ }
      qm_r = (getline qm_l < qm_f)
    }
    close(qm_f)
    if (qm_in) print "-----END CERTIFICATE-----"
    if (qm_state != "") mark(qm_state " " qm_f)
  }
  exit
}`;

/** The section for the declared paths; a snapshot (nothing declared) reads nothing. */
export function certificatesProbe(paths: readonly string[], ctx: ProbeContext): string {
  const cap = ctx.mark(`cap ${ctx.maxFileBytes}`);
  if (!paths.length) return cap;
  const look = paths.map((path) => {
    const q = ctx.quote(path);
    const folder = [
      `${ctx.mark(`folder ${path}`)}; qm_k=0`,
      `for qm_f in ${q}/*; do`,
      // A name holding a newline could not be told apart in a label: never listed.
      "  case $qm_f in *'\n'*) continue ;; esac",
      `  case $qm_f in ${CERTIFICATE_FILE}) ;; *) continue ;; esac`,
      '  [ -f "$qm_f" ] && [ ! -h "$qm_f" ] || continue',
      "  qm_k=$((qm_k + 1))",
      `  [ "$qm_k" -gt ${MAX_FOLDER_FILES} ] || set -- "$@" "$qm_f"`,
      "done",
      `[ "$qm_k" -le ${MAX_FOLDER_FILES} ] || { ${ctx.mark(`more ${path}`)}; echo $((qm_k - ${MAX_FOLDER_FILES})); }`,
    ].join("\n");
    return [
      `if qm_linked ${q}; then ${ctx.mark(`link ${path}`)}; ${PRINT_LINK}`,
      `elif [ -d ${q} ] && ! { [ -r ${q} ] && [ -x ${q} ]; }; then ${ctx.mark(`closed ${path}`)}`,
      `elif [ -d ${q} ]; then\n${folder}`,
      `elif [ -f ${q} ]; then set -- "$@" ${q}`,
      `elif [ -e ${q} ]; then ${ctx.mark(`other ${path}`)}`,
      `else ${ctx.mark(`missing ${path}`)}; fi`,
    ].join("\n");
  });
  return [
    cap,
    LINKED_COMPONENT,
    "set --",
    ...look,
    // No -L: a file swapped for a symlink since the test above is not sized through it.
    `[ $# -eq 0 ] || find "$@" -maxdepth 0 -type f -size +${ctx.maxFileBytes}c 2>/dev/null | awk -v qm_n="$QM_N" -v qm_cap=${ctx.maxFileBytes} -v qm_max=${MAX_FILE_CERTIFICATES} '${READ_AWK}' "$@"`,
    "true",
  ].join("\n");
}
