import * as z from "zod";
import { EFFECTIVE_UID, partsByLabel, pathIn, type Domain, type Finding } from "../domain.js";
import { sshdCause, sshdLatentCause, sshdRecords } from "./cause.js";
import { changedSinceStart, sshdLatent, settingCause } from "./latent.js";
import { MATCH_PHASE, MAX_LINES, parseSshd, type SshdLive } from "./parse.js";

// The SSH server's effective settings as `sshd -T` prints them, for the keywords the manifest
// declares, from the configuration the running sshd was started with.

/** A keyword as sshd_config writes it; compared lowercased, as `sshd -T` prints it. */
const KEYWORD = /^[A-Za-z][A-Za-z0-9]{0,63}$/;
const OneLine = z
  .string()
  .max(4096)
  .regex(/^[^\u0000-\u001f\u007f]*$/, "an sshd value is one line without control characters");
/**
 * `no`, `3`, `aes256-gcm@openssh.com,aes128-ctr`; a list for a keyword `sshd -T` prints on several
 * lines (AllowUsers, ListenAddress, HostKey).
 */
const Value = z.union([
  OneLine,
  z.number().transform(String),
  z.boolean().transform((b) => (b ? "yes" : "no")),
  z.array(OneLine).min(1),
]);
/** A word of `sshd -T -C`: no comma (which separates them), `=` or blank. */
const ConnectionWord = z
  .string()
  .regex(/^[^\s,=\u0000-\u001f\u007f]{1,255}$/, "one word, without commas, `=` or blanks");
/** The connection `Match` blocks are resolved for (`sshd -T -C user=…,host=…,addr=…`). */
const Connection = z
  .strictObject({
    user: ConnectionWord,
    host: ConnectionWord,
    addr: ConnectionWord,
    laddr: ConnectionWord,
    lport: ConnectionWord,
    rdomain: ConnectionWord,
  })
  .partial();
export const SshdDeclared = z.strictObject({
  connection: Connection.optional(),
  // Keys checked here: zod says only "Invalid key in record" of a bad one.
  settings: z.record(z.string(), Value).superRefine((settings, ctx) => {
    const seen = new Map<string, string>();
    for (const keyword of Object.keys(settings)) {
      if (!KEYWORD.test(keyword))
        ctx.addIssue({
          code: "custom",
          message: "not an sshd keyword (like PasswordAuthentication)",
          path: [keyword],
        });
      const other = seen.get(keyword.toLowerCase());
      if (other !== undefined)
        ctx.addIssue({
          code: "custom",
          message: `${keyword} and ${other} are one keyword (sshd reads keywords case-insensitively)`,
          path: [keyword],
        });
      seen.set(keyword.toLowerCase(), keyword);
    }
  }),
});
export type SshdDeclared = z.infer<typeof SshdDeclared>;
export type SshdValue = string | string[];

/**
 * What a snapshot (and `adopt`) declares: the settings an auditor of SSH servers asks about
 * (authentication, forwarding, who may log in, algorithms, limits), not sshd's ~100 keywords.
 */
export const SNAPSHOT_KEYWORDS = [
  "permitrootlogin",
  "passwordauthentication",
  "kbdinteractiveauthentication",
  "pubkeyauthentication",
  "permitemptypasswords",
  "authenticationmethods",
  "usepam",
  "maxauthtries",
  "logingracetime",
  "x11forwarding",
  "allowtcpforwarding",
  "allowagentforwarding",
  "allowstreamlocalforwarding",
  "gatewayports",
  "permittunnel",
  "permituserenvironment",
  "allowusers",
  "allowgroups",
  "denyusers",
  "denygroups",
  "ciphers",
  "macs",
  "kexalgorithms",
  "hostkeyalgorithms",
  "pubkeyacceptedalgorithms",
  "strictmodes",
  "loglevel",
] as const;

/**
 * sshd's options (OpenSSH 9.2's getopt string): the letters taking a value, then the flags. Those
 * that change what `sshd -T` prints are passed on to it.
 */
const VALUE_OPTIONS = "CEbcfghkopu";
const FLAG_OPTIONS = "46DGQRTdeiqrtV";
const PASSED_ON = "46cghop";
/** Where sshd's own configuration and drop-ins are, unless its listener was given -f. */
const DEFAULT_CONFIG = "/etc/ssh/sshd_config";
/** The most files (and Include directories) the probe sends back. */
const MAX_FILES = 256;
/** The most characters of a line sent back: a setting, not a file. */
const MAX_LINE_CHARS = 1000;

// Reads `sshd -T -ddd` (stdout and stderr merged, sshd ending its log lines with CR LF, then the exit status after the nonce): the
// wanted keywords' lines of stdout, the debug lines naming the files read and the lines setting a
// wanted keyword, and sshd's own error lines, which make the domain unknown when it fails. Then the
// boot time and the listener's /proc/PID/stat. Files come last: the shell stats them.
const SSHD_AWK = [
  `function mark(label) { printf "\\n%s mark %s\\n", qm_n, label }`,
  `function cut(s) { return length(s) > ${MAX_LINE_CHARS} ? substr(s, 1, ${MAX_LINE_CHARS}) : s }`,
  `BEGIN { n = split(qm_k, k, " "); for (i = 1; i <= n; i++) want[k[i]] = 1; status = "none" }`,
  `{ sub(/\r$/, "") }`,
  `index($0, qm_n " status ") == 1 { status = substr($0, length(qm_n) + 9); next }`,
  `/^debug[0-9]: / { l = substr($0, 9)`,
  `  if (l ~ /^load_server_config: filename /) { if (qm_f == "") qm_f = cut(substr(l, 30)); if (nf < ${MAX_FILES}) f[++nf] = cut(substr(l, 30)); next }`,
  `  if (l ~ /^parse_server_config_depth: config reprocess config /) { if (ns < ${MAX_LINES}) s[++ns] = "${MATCH_PHASE}"; next }`,
  `  if (l ~ / line [0-9]+: new include /) { g = l; sub(/^.* line [0-9]+: new include /, "", g); if (g !~ /^\\//) g = "/etc/ssh/" g; sub(/\\/[^\\/]*$/, "", g)`,
  `    if (g != "" && !(g in dirs) && nf < ${MAX_FILES}) { dirs[g] = 1; f[++nf] = cut(g) }; next }`,
  `  if (match(l, /:[0-9]+ setting [A-Za-z0-9]+/)) { w = substr(l, RSTART, RLENGTH); sub(/^:[0-9]+ setting /, "", w)`,
  `    if (tolower(w) in want) { if (ns < ${MAX_LINES}) s[++ns] = cut(l) } }`,
  `  next }`,
  // Where the listener writes its pid at each start, a reload's re-exec included.
  `/^pidfile \\// { pf = cut(substr($0, 9)) }`,
  `/^[a-z][a-z0-9]*( |$)/ { if ($1 in want) { if (nc < ${MAX_LINES}) c[++nc] = cut($0); else over[$1] = 1 }; next }`,
  `{ if (ne < 3) e[++ne] = substr($0, 1, 200) }`,
  `END { if (status != "0") { r = "sshd -T refuses the configuration (exit " status ")"`,
  `    for (i = 1; i <= ne; i++) r = r "; " e[i]; printf "\\n%s unknown %s\\n", qm_n, r; exit }`,
  `  mark("state"); if (qm_f != "") print "config " qm_f; if (qm_p != "") print "listener " qm_p; if (qm_p != "" && pf != "") print "pidfile " pf`,
  `  if (qm_s ~ /^[0-9]+$/) print "audited " qm_s; for (w in over) print "cut " w`,
  `  mark("boot"); while ((getline l < "/proc/stat") > 0) if (l ~ /^btime /) print l`,
  `  if (qm_p != "") { mark("stat"); if ((getline l < ("/proc/" qm_p "/stat")) > 0) print l }`,
  `  mark("config"); for (i = 1; i <= nc; i++) print c[i]`,
  `  mark("set"); for (i = 1; i <= ns; i++) print s[i]`,
  `  mark("files"); for (i = 1; i <= nf; i++) print f[i] }`,
].join("\n");

/** The `-C` argument: the declared connection, in sshd's words. */
const connectionSpec = (connection: SshdDeclared["connection"]) =>
  Object.entries(connection ?? {})
    .map(([key, value]) => `${key}=${value}`)
    .join(",");

/** A declared value as `sshd -T` prints it: one value, or one per line. */
function wanted(value: SshdValue, got: string[] | undefined): SshdValue {
  const words = (text: string) => text.trim().split(/\s+/);
  if (Array.isArray(value)) return value.map((v) => words(v).join(" "));
  // AllowUsers alice bob: sshd -T prints a line per user.
  return got !== undefined && got.length > 1 ? words(value) : words(value).join(" ");
}

/** Live values as a manifest declares them: one line as a string, several as a list. */
const asDeclared = (values: string[]): SshdValue => (values.length === 1 ? values[0]! : values);

const same = (a: SshdValue, b: SshdValue | null) =>
  b !== null && JSON.stringify(a) === JSON.stringify(b);

export const sshd: Domain<SshdDeclared, SshdLive, "sshd"> = {
  name: "sshd",
  specPath: ["sshd"],
  schema: SshdDeclared,
  severity: "high",
  onDrift: "ticket",
  remediation:
    "Set the keyword in sshd_config (or the sshd_config.d file that sets it) to the declared value, check it with `sshd -t`, and restart sshd; or accept the live value into the manifest.",
  latentWords: {
    // sshd(8): SIGHUP (a reload) re-executes sshd, which reads its configuration again.
    sentence: ({ key, latent }, q) =>
      `a reload or restart of sshd applies ${q(key)} ${q(Array.isArray(latent.becomes) ? latent.becomes.join(" ") : String(latent.becomes))}, as ${q(latent.because)} says: make the file set the declared value, or declare its value, before sshd is reloaded or restarted`,
    remediation: {
      restart:
        "Make the sshd configuration set the declared value (check with `sshd -T`) before sshd is reloaded or restarted, or declare the value it now sets.",
    },
  },
  probe(declared, ctx) {
    const keywords = declared
      ? Object.keys(declared.settings).map((k) => k.toLowerCase())
      : [...SNAPSHOT_KEYWORDS];
    if (keywords.length === 0) return "true";
    const spec = connectionSpec(declared?.connection);
    return [
      // sshd -T reads host keys only root may read: as anyone else the domain is unknown.
      EFFECTIVE_UID,
      `if [ "$qm_u" != 0 ]; then ${ctx.unknown("sshd -T needs root: declare ssh: { become: sudo } for this node")}`,
      "else",
      // The listening sshd of this network namespace, run by root. sshd writes its title over
      // its command line (`sshd: ARGV [listener] 0 of 10-100 startups`, the arguments joined by
      // blanks): the only record left of how it was started.
      "  qm_p=; qm_t=",
      `  for qm_d in /proc/[0-9]*; do [ "$qm_d/ns/net" -ef /proc/self/ns/net ] || continue; qm_l=; { IFS= read -r qm_l < "$qm_d/comm"; } 2>/dev/null; case $qm_l in sshd*) ;; *) continue;; esac`,
      `    { IFS= read -r qm_l < "$qm_d/cmdline"; } 2>/dev/null; case $qm_l in *": "*" [listener] "*) ;; *) continue;; esac`,
      `    qm_w=; while IFS= read -r qm_r; do case $qm_r in Uid:*) set -- $qm_r; qm_w=$2; break;; esac; done 2>/dev/null < "$qm_d/status"`,
      `    [ "$qm_w" = 0 ] && qm_p=\${qm_d#/proc/} && qm_t=$qm_l && break; done`,
      `  set -- -T -ddd; qm_f=; qm_b=; qm_x=; qm_v=; qm_y=; qm_s=`,
      `  if [ -n "$qm_p" ]; then`,
      // One word at a time: argv[0] (sshd's path), then options. A value runs from its option up
      // to the next word that is an option cluster (a value word that looks like one is misread);
      // the flag -D put last ends the last value.
      `    qm_r=\${qm_t#*": "}; qm_r="\${qm_r% \\[listener\\] *} -D "; qm_b=\${qm_r%%" "*}; qm_r=\${qm_r#*" "}`,
      `    while [ -n "$qm_r" ]; do qm_w=\${qm_r%%" "*}; qm_r=\${qm_r#*" "}`,
      `      if [ -n "$qm_x" ] && [ -z "$qm_y" ]; then qm_v=$qm_w; qm_y=1; continue; fi`,
      `      qm_i=; case $qm_w in -?*) qm_c=\${qm_w#-}; while :; do case $qm_c in "") qm_i=1; break;; [${FLAG_OPTIONS}]*) qm_c=\${qm_c#?};; [${VALUE_OPTIONS}]*) qm_i=1; break;; *) break;; esac; done;; esac`,
      `      if [ -z "$qm_i" ]; then if [ -n "$qm_x" ]; then qm_v="$qm_v $qm_w"; elif [ -z "$qm_s" ]; then qm_b="$qm_b $qm_w"; fi; continue; fi`,
      `      case $qm_x in f) qm_f=$qm_v;; [${PASSED_ON}]) set -- "$@" "-$qm_x" "$qm_v";; esac; qm_x=; qm_s=1; qm_c=\${qm_w#-}`,
      `      while [ -n "$qm_c" ]; do qm_k=\${qm_c%"\${qm_c#?}"}; qm_c=\${qm_c#?}; case $qm_k in [${VALUE_OPTIONS}]) qm_x=$qm_k; qm_v=$qm_c; qm_y=\${qm_c:+1}; break;; [${PASSED_ON}]) set -- "$@" "-$qm_k";; esac; done`,
      "    done",
      // The binary it runs, by the path it was started with, unless that is now another file.
      `    [ "$qm_b" -ef "/proc/$qm_p/exe" ] || qm_b=/proc/$qm_p/exe`,
      `  else qm_b=$(command -v sshd); fi`,
      `  if [ -z "$qm_b" ] || [ ! -x "$qm_b" ]; then ${ctx.unknown("no sshd on this host: none listens in its network namespace, and none is on the PATH")}`,
      "  else",
      `  [ -z "$qm_f" ] || set -- "$@" -f "$qm_f"${spec ? `; set -- "$@" -C ${ctx.quote(spec)}` : ""}`,
      `  qm_o=$({ "$qm_b" "$@" 2>&1 </dev/null; printf '%s status %s\\n' "$QM_N" "$?"; } | awk -v qm_n="$QM_N" -v qm_p="$qm_p" -v qm_f="$qm_f" -v qm_s=${ctx.lastAudit} -v qm_k=${ctx.quote(keywords.join(" "))} '${SSHD_AWK}')`,
      `  printf '%s\\n' "$qm_o"`,
      // The files sshd read (and its Include directories), after the last marker: when each
      // changed, against the listener's start.
      `  case $qm_o in *"$QM_N mark files"*) qm_l=\${qm_o##*"$QM_N mark files"};; *) qm_l=;; esac`,
      "  set --",
      `  while IFS= read -r qm_w; do [ -z "$qm_w" ] || set -- "$@" "$qm_w"; done <<QM_SSHD_FILES`,
      "$qm_l",
      "QM_SSHD_FILES",
      // A reload (SIGHUP) re-executes the listener under its pid, which keeps its start time: the
      // pid file it then rewrites tells when it last read its files, if it holds the listener's pid.
      `  case $qm_o in *"\npidfile "*) qm_q=\${qm_o#*"\npidfile "}; qm_q=\${qm_q%%"\n"*};; *) qm_q=;; esac`,
      `  if [ -n "$qm_q" ] && [ -f "$qm_q" ] && { IFS= read -r qm_w < "$qm_q"; } 2>/dev/null && [ "$qm_w" = "$qm_p" ]; then set -- "$@" "$qm_q"; fi`,
      `  ${ctx.mark("changed")}`,
      `  [ $# -eq 0 ] || stat -L -c '%Y %n' -- "$@" 2>/dev/null`,
      "  true",
      "  fi",
      "fi",
    ].join("\n");
  },
  parse(output, ctx) {
    return parseSshd(partsByLabel("sshd", ctx.parts(output)));
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    for (const [keyword, value] of Object.entries(declared.settings)) {
      const key = keyword.toLowerCase();
      // Cut by the probe's bound: listed as unknown, never compared on a part of its lines.
      if (live.cut.has(key)) continue;
      const got = live.settings.get(key);
      const want = wanted(value, got);
      const files = got === undefined ? null : asDeclared(got);
      const latent = sshdLatent(live, key, files);
      const path = pathIn(this, "settings", keyword);
      if (latent) {
        // The running sshd read its files before they changed: it applies what it read then,
        // which the host no longer holds; the files' value is what a restart applies.
        if (!same(want, files)) findings.push({ key, declared: want, live: want, path, ...latent });
        continue;
      }
      if (same(want, files)) continue;
      const finding: Finding = { key, declared: want, live: files, path };
      if (got === undefined)
        finding.detail = `sshd -T prints no ${key}: not a keyword of this sshd, or the probe's bound left it out`;
      else if (!live.listener)
        finding.detail = `no sshd listens in this host's network namespace: ${live.config} sets what its start applies`;
      else if (!live.setBy.has(key) && changedSinceStart(live).length)
        // No line sets it now; one removed since sshd started would still be applied.
        finding.detail = `no file sets it now, and ${changedSinceStart(live)[0]![0]} changed after sshd started: if a line setting it was removed, the running sshd still applies that line's value until it restarts`;
      const cause = got && settingCause(live, key, got);
      if (cause) finding.cause = cause;
      findings.push(finding);
    }
    return findings;
  },
  records: sshdRecords,
  cause: sshdCause,
  latentCause: sshdLatentCause,
  watchTargets() {
    return {
      // The default configuration, its drop-ins, and the pid file a restart of sshd rewrites.
      paths: [DEFAULT_CONFIG, "/run/sshd.pid"],
      directories: ["/etc/ssh/sshd_config.d"],
      // A listener started with -f elsewhere (or a PidFile elsewhere) and files it includes from
      // elsewhere announce nothing here.
      polled: true,
    };
  },
  snapshot(live) {
    // Keywords come from sshd's own list (SNAPSHOT_KEYWORDS), never from host text alone.
    const entries = SNAPSHOT_KEYWORDS.flatMap((key) => {
      const values = live.settings.get(key);
      return values === undefined ? [] : [[key, asDeclared(values)] as const];
    });
    return entries.length ? { settings: Object.fromEntries(entries) } : undefined;
  },
};
