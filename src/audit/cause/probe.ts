import type { ProbeContext } from "../../domains/domain.js";
import type { RecordRequest } from "../../domains/host-record.js";
import { RPM_QUERY, RPM_QUERY_SETUP } from "../../domains/rpm-query.js";

// What the host recorded about changes, read in the audit's own round trip without root: the boot
// time, package transactions since the node's last audit (dpkg's and apt's logs; rpm's database),
// which package ships each declared file (with the digest it recorded), and the mtime and owner of
// each declared file and of what a domain asks for (an enablement link): what the domains' requests
// (`Domain.records`) name, nothing else of the host's records.

/** Shell variable holding the node's last audit (epoch seconds, or empty), set per node. */
export const SINCE_VARIABLE = "QM_SINCE";

/** At most this much of each log's tail is read: a log rotated past it records nothing. */
export const LOG_TAIL_BYTES = 1024 * 1024;
// A log line is cut here: an apt Commandline naming hundreds of packages is not worth sending.
const LINE_CHARS = 300;

// Reads the declared paths (one per line, until a line `--`), then prints `package md5 path` for
// each declared path that dpkg's status lists among a package's Conffiles.
const CONFFILES = [
  'NR == FNR { if ($0 == "--") { d = 1; next } if (!d) f[$0] = 1; next }',
  "/^Package: / { p = $2 }",
  "/^Conffiles:/ { c = 1; next }",
  "c && /^ / { if ($1 in f) print p, $2, $1; next }",
  "{ c = 0 }",
].join(" ");

// One tail of dpkg.log and of apt's history.log (its `==> FILE <==` header between them), one awk:
// dpkg.log lines since `s` that change a wanted package, or a declared conffile; then, under the
// apt-history mark (`qm_n` is the nonce), the history.log transactions since `s` in which one of
// those events (whose first 19 characters are the time) ran: when, which command, at whose
// request. Others are not sent: a log's tail may hold hundreds. One still open at the end (apt
// interrupted) counts from its start. Lines before any header are dpkg.log's (tail names no file
// when it reads one). A dpkg.log line before `s` is skipped on its first 19 characters, never split
// into fields: in an hourly audit that is nearly all of the tail (the section's CPU on a host, 6.4
// against 5.1 ms), and so is a `status` line, most of any dpkg.log (the time, then ` status `). Last,
// the boot time from /proc/stat under the boot mark: no awk of its own.
const HISTORY_HEADER = "==> /var/log/apt/history.log <==";
const LOGS = [
  'BEGIN { n = split(qm_p, l, " "); for (i = 1; i <= n; i++) w[l[i]] = 1;',
  'n = split(qm_f, l, "\\n"); for (i = 1; i <= n; i++) f[l[i]] = 1;',
  'n = split(qm_l, l, "\\n"); for (i = 1; i <= n; i++) sp[l[i]] = 1; n = 0 }',
  'function mark() { if (!m) printf "\\n%s mark %s\\n", qm_n, "apt-history"; m = 1 }',
  "function ran(from, to,  i) { for (i = 1; i <= n; i++) if (t[i] >= from && t[i] <= to) return 1; return 0 }",
  "function event() { print; t[++n] = substr($0, 1, 19) }",
  // The asked paths (`sp`) that the file list of a package configured since (`cf`) names, as
  // `PACKAGE PATH`: a package's list is PACKAGE:ARCH.list where several architectures may be
  // installed, else PACKAGE.list.
  "function shipped(  p, a, f, l, r) { for (p in cf) { if (p !~ /^[a-z0-9][a-z0-9+.-]*(:[a-z0-9-]+)?$/) continue;",
  'a = p; sub(/:.*/, "", a); f = "/var/lib/dpkg/info/" p ".list";',
  'if ((r = (getline l < f)) < 0) { f = "/var/lib/dpkg/info/" a ".list"; r = (getline l < f) }',
  "while (r > 0) { if (l in sp) print a, l; r = (getline l < f) } close(f) } }",
  `$0 == "${HISTORY_HEADER}" { h = 1; mark(); next }`,
  "!h && substr($0, 1, 19) < s { next }",
  // dpkg's status lines, most of the log, skipped before field splitting; when asked (`qm_c`), the
  // line that ends a configure step is kept.
  '!h && substr($0, 20, 8) == " status " { if (qm_c && $4 == "installed") print; next }',
  '!h && $3 ~ /^(install|upgrade|remove|purge)$/ { p = $4; sub(/:.*/, "", p); if (p in w) event(); next }',
  '!h && $3 == "conffile" && ($4 in f) { event(); next }',
  // Every package's configure step and every conffile line, when asked (`qm_c`).
  '!h && qm_c && ($3 == "configure" || $3 == "conffile") { if ($3 == "configure") cf[$4] = 1; event(); next }',
  "!h || !n { next }",
  '/^Start-Date: / { st = $2 " " $3; k = (st >= s); b = "" }',
  `k && /^(Start-Date|Commandline|Requested-By): / { b = b substr($0, 1, ${LINE_CHARS}) "\\n" }`,
  `k && /^End-Date: / { if (ran(st, $2 " " $3)) printf "%s%s\\n", b, substr($0, 1, ${LINE_CHARS}); k = 0 }`,
  'END { mark(); if (k && ran(st, "9")) printf "%s", b;',
  'if (qm_l != "") { printf "\\n%s mark %s\\n", qm_n, "shipped"; shipped() }',
  'printf "\\n%s mark %s\\n", qm_n, "boot";',
  'while ((getline bt < "/proc/stat") > 0) if (bt ~ /^btime /) { split(bt, bx, " "); print bx[2] } }',
].join(" ");
// The boot time (`btime` of /proc/stat) where LOGS does not run.
const BOOT = "awk '/^btime / { print $2 }' /proc/stat 2>/dev/null";
// The declared paths, one per line in `qm_f`, as the keys of `f`.
const DECLARED_PATHS = 'BEGIN { n = split(qm_f, l, "\\n"); for (i = 1; i <= n; i++) f[l[i]] = 1 }';

// rpm keeps no log, but each installed package's time and transaction (INSTALLTID): one line per
// installed instance of a declared package or of the owner of a declared file.
const RPM_PACKAGE = "%{NAME} %{INSTALLTIME} %{INSTALLTID} %{EPOCH}:%{VERSION}-%{RELEASE}";
// `rpm -qf` prints each owner's header, then every file of it with its digest: only the lines of
// declared paths are sent, each after its owner's header (a package may ship thousands of files).
const RPM_OWNED = [
  DECLARED_PATHS,
  "/^[^ \\/]+ [0-9]+ [0-9]+ [^ ]+ [^ ]+$/ { h = $0; next }",
  'h != "" && (substr($0, index($0, " ") + 1) in f) { print h, $0 }',
].join(" ");
// rpm's database, found as the packages domain finds it: no dpkg or apk database, and rpm's files.
const RPM_HOST =
  "[ ! -f /var/lib/dpkg/status ] && [ ! -f /lib/apk/db/installed ] && { [ -d /var/lib/rpm ] || [ -d /usr/lib/sysimage/rpm ]; } && command -v rpm >/dev/null 2>&1";

// /lib/apk/db/installed names each package (P:), then its directories (F:), each one's files (R:)
// and each file's checksum (Z:, `Q1` then the base64 of its sha1): the declared files' are sent.
const APK_OWNED = [
  DECLARED_PATHS,
  "/^P:/ { p = substr($0, 3); k = 0 }",
  "/^F:/ { d = substr($0, 3); k = 0 }",
  '/^R:/ { r = (d == "" ? "" : "/" d) "/" substr($0, 3); k = (r in f) }',
  "k && /^Z:Q1/ { print p, substr($0, 5), r; k = 0 }",
].join(" ");
// apk's database, found as the packages domain finds it: no dpkg database, apk's file.
const APK_HOST = "[ ! -f /var/lib/dpkg/status ] && [ -f /lib/apk/db/installed ]";

/**
 * Hashes again, with `tool`, each declared file that the owner lines in `$variable` name: only files
 * a package ships, whose digest it recorded. `patterns` are how a line names the file; a superset
 * (a path that is a prefix of another matches too): one hash more, never one less.
 */
function rehash(
  variable: string,
  tool: string,
  files: readonly string[],
  patterns: (file: string) => string[],
  q: (text: string) => string,
): string[] {
  return [
    "set --",
    ...files.map(
      (f) =>
        `case "$${variable}" in ${patterns(f)
          .map((p) => `*${q(p)}*`)
          .join("|")}) set -- "$@" ${q(f)};; esac`,
    ),
    `[ $# -eq 0 ] || ${tool} -- "$@" 2>/dev/null`,
  ];
}

/** At most this many matches of a domain's globs are looked up per node. */
export const MAX_GLOB_MATCHES = 500;

/** Sets `"$@"` to the globs' existing matches, at most MAX_GLOB_MATCHES of them. */
const globMatches = (globs: readonly string[]) => [
  "set --",
  ...(globs.length
    ? [
        `for g in ${globs.join(" ")}; do [ -e "$g" ] && [ $# -lt ${MAX_GLOB_MATCHES} ] && set -- "$@" "$g"; done`,
      ]
    : []),
];

/** `text` as `awk -v` passes it on: awk takes escape sequences out of the value (`\x2d`, a unit name's `-`). */
const awkValue = (text: string) => text.replaceAll("\\", "\\\\");

/** `text` as an extended regular expression matching only itself. */
const ere = (text: string) => text.replace(/[.[\]*^$+?(){}|\\]/g, "\\$&");

/** The cause section's script: one `date`, a few awk and stat calls, no root. */
export function causeProbe(request: RecordRequest, ctx: ProbeContext): string {
  const q = ctx.quote;
  const targets = {
    packages: request.packages ?? [],
    files: request.files ?? [],
    packagesByFile: request.packagesByFile ?? [],
    globs: request.globs ?? [],
    shippedSince: request.shippedSince ?? [],
  };
  // Configure steps are read for their own sake, and to know whose file lists to read.
  const steps = request.steps || targets.shippedSince.length > 0;
  const stat = (request.stat ?? []).filter((s) => s.entries?.length !== 0);
  const files = targets.files.map(q).join(" ");
  // Debian policy keeps package files under /etc as conffiles; only paths elsewhere need the
  // (much larger) md5sums lists.
  const outsideEtc = targets.files.filter((f) => !f.startsWith("/etc/"));
  const entries = stat
    .map(({ under, entries = [] }) => [under, ...entries.map((e) => `${under}/${q(e)}`)].join(" "))
    .join(" ");
  const lines = [
    ctx.mark("clock"),
    // The host's own local time of the last audit: its logs are written in local time.
    `if [ -n "$${SINCE_VARIABLE}" ]; then s=$(date -d "@$${SINCE_VARIABLE}" '+%Y-%m-%d %H:%M:%S %z' 2>/dev/null); else s=$(date '+- - %z'); fi`,
    `printf '%s\\n' "$s"`,
    's="${s% *}"; [ "$s" = "- -" ] && s=',
  ];
  const owning = targets.files.length > 0 || targets.globs.length > 0;
  if (owning)
    lines.push(
      ctx.mark("owned"),
      "owned=",
      ...globMatches(targets.globs),
      "[ -f /var/lib/dpkg/status ] &&",
      `  owned=$({ printf '%s\\n' ${files} "$@" --; } | awk '${CONFFILES}' - /var/lib/dpkg/status 2>/dev/null)`,
      ...(outsideEtc.length
        ? [
            "[ -d /var/lib/dpkg/info ] &&",
            `  owned="$owned$(printf '\\n'; grep -H -E ${outsideEtc.map((f) => `-e ${q(`^[0-9a-f]{32}  ${ere(f.slice(1))}$`)}`).join(" ")} /var/lib/dpkg/info/*.md5sums 2>/dev/null)"`,
          ]
        : []),
      `[ -z "$owned" ] || printf '%s\\n' "$owned"`,
      ctx.mark("md5"),
      ...rehash("owned", "md5sum", targets.files, (f) => [` ${f}`, `  ${f.slice(1)}`], q),
    );
  if (owning || stat.length)
    lines.push(
      ctx.mark("stat"),
      ...globMatches(targets.globs),
      `stat -c '%Y %U %n' -- ${files} ${entries}${targets.globs.length ? ' "$@"' : ""} 2>/dev/null`,
    );
  // A package named by its md5sums list (`/var/lib/dpkg/info/NAME[:ARCH].md5sums:…`) or its status,
  // each owned line's first word: shell builtins only (an awk here was a tenth of the section's CPU).
  const owners = owning
    ? [
        "while IFS= read -r o; do",
        '  o=${o%% *}; o=${o##*/}; o=${o%%.md5sums:*}; [ -z "$o" ] || pk="$pk ${o%%:*}"',
        "done <<EOF",
        "$owned",
        "EOF",
      ]
    : [];
  // Packages named after files (a kernel's after its image): shell builtins only.
  const byFile = targets.packagesByFile.map(
    ({ glob, strip, prefix }) =>
      `for f in ${glob}; do [ -e "$f" ] && pk="$pk ${prefix}\${f#${strip}}"; done`,
  );
  // Asked for the configure steps since the last audit alone: not read in a node's first audit.
  const stepsAlone = !(targets.packages.length || owning || byFile.length);
  if (!stepsAlone || steps)
    lines.push(
      ctx.mark("dpkg-log"),
      `pk=${q(targets.packages.join(" "))}`,
      ...byFile,
      ...owners,
      `if ${stepsAlone ? '[ -n "$s" ] && ' : ""}[ -r /var/log/dpkg.log ]; then h=; [ -r /var/log/apt/history.log ] && h=/var/log/apt/history.log`,
      `  tail -c ${LOG_TAIL_BYTES} /var/log/dpkg.log $h 2>/dev/null | awk -v s="$s"${steps ? ' -v qm_c="${s:+1}"' : ""}${targets.shippedSince.length ? ` -v qm_l=${q(awkValue(targets.shippedSince.join("\n")))}` : ""} -v qm_p="$pk" -v qm_f=${q(targets.files.join("\n"))} -v qm_n="$QM_N" '${LOGS}'`,
      `else ${ctx.mark("apt-history")}; ${ctx.mark("boot")}; ${BOOT}; fi`,
    );
  else lines.push(ctx.mark("boot"), BOOT);
  if (targets.packages.length || targets.files.length)
    lines.push(
      `if ${RPM_HOST}; then`,
      RPM_QUERY_SETUP,
      ...(targets.packages.length
        ? [
            ctx.mark("rpm"),
            `${RPM_QUERY} -q --qf '${RPM_PACKAGE}\\n' -- ${targets.packages.map(q).join(" ")} 2>/dev/null`,
          ]
        : []),
      ...(targets.files.length
        ? [
            ctx.mark("rpm-owned"),
            `ro=$(${RPM_QUERY} -qf --qf '${RPM_PACKAGE} %{FILEDIGESTALGO}\\n[%{FILEDIGESTS} %{FILENAMES}\\n]' -- ${files} 2>/dev/null | awk -v qm_f=${q(targets.files.join("\n"))} '${RPM_OWNED}')`,
            `[ -z "$ro" ] || printf '%s\\n' "$ro"`,
            ctx.mark("sha256"),
            // rpm records sha256 digests (its algorithm 8) since RHEL 6.
            ...rehash("ro", "sha256sum", targets.files, (f) => [` ${f}`], q),
          ]
        : []),
      "fi",
    );
  // apk records no time for its transactions (an owned file's cause is then unknown), but which
  // package ships a file and its sha1: a local edit is told from the package's contents.
  if (targets.files.length)
    lines.push(
      `if ${APK_HOST}; then`,
      ctx.mark("apk-owned"),
      `ao=$(awk -v qm_f=${q(targets.files.join("\n"))} '${APK_OWNED}' /lib/apk/db/installed 2>/dev/null)`,
      `[ -z "$ao" ] || printf '%s\\n' "$ao"`,
      ctx.mark("sha1"),
      ...rehash("ao", "sha1sum", targets.files, (f) => [` ${f}`], q),
      "fi",
    );
  lines.push("true");
  return lines.join("\n");
}
