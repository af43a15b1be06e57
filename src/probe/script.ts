import { randomBytes } from "../crypto.js";
import type { ParseContext, ProbeContext } from "../domains/domain.js";
import { ProbeParseError, ProbeTruncatedError } from "../errors.js";

// The probe is one POSIX sh script sent on stdin. Every line it frames starts with a per-run
// random nonce, so the contents of a declared file cannot forge a section boundary.

export interface ProbeSection {
  name: string;
  script: string;
  /** awk functions the script calls through `ProbeContext.awk`, run by the probe's shared awk. */
  awk?: string;
  /**
   * The records of a file (blank-line separated) this section's functions read, those holding
   * `holding`: where an earlier section reads that file with `qm_record`, they are kept for this
   * one's `qm_kept`.
   */
  keeps?: { file: string; holding: string };
}

export interface Probe {
  nonce: string;
  script: string;
}

export function newNonce(): string {
  return `QM${randomBytes(12).toString("hex")}`;
}

export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The shell variable a node's probe sets to its last audit (epoch seconds), when asked to. */
export const LAST_AUDIT_VARIABLE = "QM_SINCE";

/** A shell command calling the shared awk's function `fn` (see `ProbeContext.awk`). */
function awkCall(fn: string, call: { values?: readonly string[]; input?: string } = {}): string {
  if (!/^[a-z][a-z0-9_]*$/.test(fn)) throw new Error(`not an awk function name: ${fn}`);
  return [
    ...(call.input === undefined ? [] : [`printf '%s awk-input\\n' "$QM_N"`, call.input]),
    `printf '%s\\n' "$QM_N awk ${fn}" ${[...(call.values ?? []), '"$QM_N awk-run"'].join(" ")}`,
  ].join("\n");
}

/** A probe's context, with the paths its sections ask the probe's one `stat` for, in order. */
export interface BuildContext extends ProbeContext {
  readonly statAsks: readonly string[];
}

export function probeContext(nonce: string, maxFileBytes: number): BuildContext {
  const statAsks: string[] = [];
  return {
    lastAudit: `"\${${LAST_AUDIT_VARIABLE}:-}"`,
    quote: shellQuote,
    mark: (label) => `printf '\\n%s mark %s\\n' "$QM_N" ${shellQuote(label)}`,
    unknown: (reason) => `printf '\\n%s unknown %s\\n' "$QM_N" ${shellQuote(reason)}`,
    maxFileBytes,
    awk: awkCall,
    statAsks,
    stat(paths) {
      statAsks.push(paths);
      return String(statAsks.length);
    },
  };
}

// The probe's one awk, which the sections that have awk functions are piped through: it copies
// every line on as it is but the calls `ProbeContext.awk` prints. A call is the line
// `NONCE awk FN`, a value a line, then `NONCE awk-run`; before it, an input announced by
// `NONCE awk-input` is kept as lines for FN. Output without a final newline may run into the line
// announcing an input or a call: it is sent on, or kept as the input's last line, as it is. A
// process per awk was most of the probe's CPU: nine of fourteen programs.
// Every line of every section passes here: the markers are made once, and a line costs one `index`
// (kept for a line holding the marker) and a `print` (or its keeping as input).
const DISPATCH = [
  'BEGIN { qm_a = qm_n " awk"; qm_c = qm_a " "; qm_ai = qm_a "-input"; qm_ar = qm_a "-run"; qm_l = length(qm_c) }',
  "{ if (!qm_s) { if (!(qm_x = index($0, qm_a))) { print; next }",
  '    if (qm_x > 1) { printf "%s", substr($0, 1, qm_x - 1); $0 = substr($0, qm_x) } }',
  "  else if (qm_s == 2) { if ($0 == qm_ar) { qm_s = 0; qm_call(qm_f); qm_in = 0; qm_vn = 0 } else qm_v[++qm_vn] = $0; next }",
  "  else { if (!(qm_x = index($0, qm_c))) { qm_i[++qm_in] = $0; next }",
  "    if (qm_x > 1) qm_i[++qm_in] = substr($0, 1, qm_x - 1); $0 = substr($0, qm_x) }",
  "  if ($0 == qm_ai) { qm_s = 1; qm_in = 0; next }",
  "  if (substr($0, 1, qm_l) == qm_c) { qm_f = substr($0, qm_l + 1); qm_s = 2; next }",
  "  print }",
].join("\n");

// The probe's one `stat` (`ProbeContext.stat`), run before any section with every ask's paths,
// `/..` between two asks' (no ask names it: declared paths hold no `..`, the rest is the domains'
// own text): a record per path, two lines led by the nonce, `NONCE %Y %U %s %y %f %n` then
// `NONCE>%N`. A name or target holding a newline continues on lines without the nonce (a host's
// file name cannot hold it): that record is marked (`?`), its own alone. Links are stat'ed as links
// (a link's own time is when it was made), and `%N` gives the target: `NAME -> TARGET` under GNU's
// literal quoting, `'NAME' -> 'TARGET'` from busybox; another shape is a target unknown (`?`).
// `qm_stash` keeps each record's ask (`qm_sg`), mtime, owner, size, UTC offset (`%y`'s last
// field), type (`f` `d` `l` `o`, from `%f`'s high digits), name and link target, and its mark
// (`qm_sb`); `qm_stated` prints an ask's records.
const STASH = [
  "function qm_stash(  i, l, r, g, n) { n = length(qm_n) + 1; g = 1",
  "  for (i = 1; i <= qm_in; i++) { l = qm_i[i]",
  '    if (substr(l, 1, n) == qm_n " ") { if (r) g = qm_stend(r, g); r = ++qm_sr; qm_sa[r] = substr(l, n + 1); qm_sb[r] = 0; qm_sh[r] = 0 }',
  '    else if (r && !qm_sh[r] && substr(l, 1, n) == qm_n ">") { qm_sh[r] = 1; qm_sN[r] = substr(l, n + 1) }',
  "    else if (r) qm_sb[r] = 1 }",
  "  if (r) qm_stend(r, g) }",
  // Ends record `r` of ask `g`: returns the ask of the next record (the next one after `/..`).
  "function qm_stend(r, g,  x, t, m, N, k) { m = qm_sa[r]",
  '  if (!qm_sh[r] || !sub(/^-?[0-9]+ [^ ]+ [0-9]+ [^ ]+ [^ ]+ [^ ]+ [0-9a-f]+ /, "", m)) qm_sb[r] = 1',
  '  else if (!qm_sb[r] && m == "/..") { qm_sr--; return g + 1 }',
  '  split(qm_sa[r], x, " "); qm_sg[r] = g; qm_sy[r] = x[1]; qm_su[r] = x[2]; qm_ss[r] = x[3]; qm_so[r] = x[6]; qm_sn[r] = m',
  '  t = substr(x[7], 1, length(x[7]) - 3); qm_st[r] = t == "a" ? "l" : t == "4" ? "d" : t == "8" ? "f" : "o"; qm_sl[r] = ""',
  '  if (qm_st[r] == "l" && !qm_sb[r]) { N = qm_sN[r]; k = length(m)',
  '    if (index(N, m " -> ") == 1) qm_sl[r] = substr(N, k + 5)',
  '    else if (index(N, "\\047" m "\\047 -> \\047") == 1 && substr(N, length(N)) == "\\047") qm_sl[r] = substr(N, k + 8, length(N) - k - 8)',
  "    else qm_sb[r] = 1 }",
  "  return g }",
  'function qm_stated(  r) { for (r = 1; r <= qm_sr; r++) if (qm_sg[r] == qm_v[1]) { if (qm_sb[r]) { print "?"; continue }',
  '  print qm_sy[r], qm_su[r], qm_st[r], qm_sn[r]; if (qm_st[r] == "l") print "-> " qm_sl[r] } }',
].join("\n");

/** The probe's one stat, in a function (the asks' `"$@"` is its own), its records kept by the shared awk. */
function statAll(asks: readonly string[]): string {
  return [
    "qm_stat() {",
    "set --",
    asks.join('\nset -- "$@" /..\n'),
    // An empty list reads stdin (busybox) or fails: no stat.
    `[ $# -eq 0 ] || QUOTING_STYLE=literal stat -c "$QM_N %Y %U %s %y %f %n\n$QM_N>%N" -- "$@" 2>/dev/null`,
    "}",
    awkCall("qm_stash", { input: "qm_stat" }),
  ].join("\n");
}

// A file read one record (blank-line separated) at a time, by several sections, is read once: a
// section's function reads it with `qm_record(f)` (getline's result, the record in `qm_rec`; the
// caller sets RS = "" around its loop and reads to the end), which keeps the records a later
// section asked for (`keeps`: those holding `qm_kh[f]`); that section's `qm_kept(f)` is how many
// were kept (`qm_kr[f, 1..n]`), or -1 where nothing was kept for it (it asked for nothing, or no
// section read f to its end before), and it reads f itself. One section may ask for a file's
// records. dpkg's status is 731 KB here: each read of it about 0.6 ms of the shared awk's CPU.
const RECORDS = [
  "function qm_record(f,  r) { if ((r = (getline qm_rec < f)) > 0) { if ((f in qm_kh) && index(qm_rec, qm_kh[f])) qm_kr[f, ++qm_kn[f]] = qm_rec } else qm_kd[f] = r; return r }",
  "function qm_kept(f) { return (f in qm_kh) && (f in qm_kd) && qm_kd[f] == 0 ? qm_kn[f] + 0 : -1 }",
];

/** `text` as an awk string literal. */
const awkString = (text: string) =>
  `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`;

/** The section calls the shared awk (its domain may have functions it does not call here). */
const calls = (s: ProbeSection) => s.awk !== undefined && s.script.includes(`"$QM_N awk `);

/**
 * The shared awk's program: the dispatch, a call by name of each function the sections call (and
 * the probe's one stat, `qm_stash`), and the functions those call, as they do. mawk compiles the
 * whole program on every run (the 18 KB of every section's functions, about 0.7 ms here): what no
 * call reaches (accounts' sudoers reading where no sudoers is declared) is left out. A section's
 * `awk` is function definitions, each starting a line; a function calls another as `name(` (awk
 * allows no space there).
 */
function sharedAwk(sections: readonly ProbeSection[], stat: boolean): string {
  const definitions = new Map<string, string>();
  const texts = [...RECORDS, ...(stat ? [STASH] : []), ...sections.map((s) => s.awk!)];
  for (const text of texts.flatMap((t) => t.split(/^(?=function )/m))) {
    const name = /^function ([A-Za-z_][A-Za-z0-9_]*)\(/.exec(text)?.[1];
    if (name === undefined) throw new Error(`not an awk function definition: ${text.slice(0, 40)}`);
    definitions.set(name, text.replace(/\n$/, ""));
  }
  const called = new Set([
    ...(stat ? ["qm_stash"] : []),
    ...sections.flatMap((s) =>
      [...s.script.matchAll(/"\$QM_N awk ([a-z][a-z0-9_]*)"/g)].map((m) => m[1]!),
    ),
  ]);
  const kept = new Set<string>();
  const keep = (name: string) => {
    const text = definitions.get(name);
    if (text === undefined || kept.has(name)) return;
    kept.add(name);
    for (const [, callee] of text.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\(/g)) keep(callee!);
  };
  called.forEach(keep);
  const call = [...called]
    .filter((n) => definitions.has(n))
    .map((n) => `if (f == "${n}") ${n}()`)
    .join("; else ");
  const asked = sections.flatMap((s) => (s.keeps ? [s.keeps] : []));
  if (new Set(asked.map((k) => k.file)).size < asked.length)
    throw new Error("two sections ask for the records of one file");
  const keeps = asked.map((k) => `qm_kh[${awkString(k.file)}] = ${awkString(k.holding)}`);
  const program = [
    DISPATCH,
    ...(keeps.length ? [`BEGIN { ${keeps.join("; ")} }`] : []),
    `function qm_call(f) { ${call} }`,
    ...[...definitions].filter(([name]) => kept.has(name)).map(([, text]) => text),
  ].join("\n");
  if (program.includes("'")) throw new Error("an awk program holds a single quote");
  return program;
}

// What the probe prints, alone, on a host whose /dev/null is not the null device.
const BROKEN_NULL = "broken /dev/null";

export function buildProbe(
  nonce: string,
  sections: ProbeSection[],
  statAsks: readonly string[] = [],
): Probe {
  // Each section is the body of a shell function, called at once: its positional parameters
  // (`set --`) are its own, and it costs no fork (a subshell per section did: a tenth of the
  // probe's CPU). What a subshell also kept apart, variables, functions and the shell's state, a
  // section keeps apart by the rules of test/unit/probe/isolation.test.ts, which runs every
  // registered domain's section; an `exit` ends the whole probe, which then reads as truncated.
  const framed = (list: readonly ProbeSection[]) =>
    list
      .map(
        (s) =>
          `printf '\\n%s begin %s\\n' "$QM_N" ${shellQuote(s.name)}\nqm_section() {\n${s.script}\n}\nqm_section\nprintf '\\n%s end %s\\n' "$QM_N" ${shellQuote(s.name)}`,
      )
      .join("\n");
  // The sections with awk functions run first, in one subshell piped into the shared awk (a fork,
  // not a program); the others print straight to stdout, so their bytes (a file's contents) never
  // pass through an awk (busybox's turns NUL into newline).
  // The probe's one stat runs first in it, before any section that asks.
  const shared = sections.filter(calls);
  const stat = shared.length > 0 && statAsks.length > 0;
  const body = [
    ...(shared.length
      ? [
          `{\n${stat ? `${statAll(statAsks)}\n` : ""}${framed(shared)}\n} | awk -v qm_n="$QM_N" '${sharedAwk(shared, stat)}'`,
        ]
      : []),
    framed(sections.filter((s) => !calls(s))),
  ].join("\n");
  const script = [
    "# quartermaster probe: reads /proc, /sys, package databases and declared files; writes nothing",
    "LC_ALL=C; export LC_ALL",
    "PATH=/usr/bin:/bin:/usr/sbin:/sbin; export PATH",
    `QM_N=${nonce}`,
    // Every section discards its errors into /dev/null: where that is not the null device, they
    // fail (not root) or fill a file (root), and facts go missing unseen. The probe stops at once.
    `[ -c /dev/null ] || { printf '%s ${BROKEN_NULL}\\n' "$QM_N"; exit 0; }`,
    body,
    `printf '\\n%s done\\n' "$QM_N"`,
    "",
  ].join("\n");
  return { nonce, script };
}

export interface SectionOutput {
  output: string;
  /** Set when the host said it cannot show this domain, with its reason. */
  unknown?: string;
}

/**
 * Splits probe stdout into sections. Missing `done`, a section without its end, or text outside
 * the frames means the output is not what the probe printed: an error, never "no drift".
 */
export function parseProbeOutput(stdout: string, nonce: string): Map<string, SectionOutput> {
  const sections = new Map<string, SectionOutput>();
  const marker = `\n${nonce} `;
  const text = stdout.startsWith(`${nonce} `) ? `\n${stdout}` : stdout;
  if (text.startsWith(`\n${nonce} ${BROKEN_NULL}\n`))
    throw new ProbeParseError(
      "probe",
      "/dev/null on this host is not the null device (a regular file, or missing): the errors the probe's commands discard would be written there or fail, so its facts cannot be trusted. Restore it as root: rm -f /dev/null && mknod -m 666 /dev/null c 1 3",
    );
  if (!text.includes(`${marker}done`)) {
    throw new ProbeTruncatedError("probe", "output is truncated (no end-of-probe marker)");
  }
  // Linear: each search starts where the previous frame ended, and a section is scanned once for
  // `unknown`.
  let pos = text.indexOf(marker);
  while (pos !== -1) {
    const lineEnd = text.indexOf("\n", pos + 1);
    const line = text.slice(pos + marker.length, lineEnd === -1 ? undefined : lineEnd);
    if (line === "done") return sections;
    const begin = /^begin (\S+)$/.exec(line);
    if (!begin) throw new ProbeParseError("probe", `unexpected frame line "${line.slice(0, 80)}"`);
    const name = begin[1]!;
    // A host that prints a section twice has broken the framing: which copy is true cannot be
    // known.
    if (sections.has(name))
      throw new ProbeParseError(name, "section appears twice in the probe output");
    const endMarker = `${marker}end ${name}\n`;
    const end = text.indexOf(endMarker, lineEnd);
    if (end === -1 || lineEnd === -1) throw new ProbeTruncatedError(name, "section is truncated");
    const output = text.slice(lineEnd + 1, end);
    const unknownAt = output.indexOf(`${marker}unknown `);
    const unknownLine = output.startsWith(`${nonce} unknown `)
      ? 0
      : unknownAt === -1
        ? -1
        : unknownAt + 1;
    if (unknownLine !== -1) {
      const reasonStart = unknownLine + nonce.length + " unknown ".length;
      const reasonEnd = output.indexOf("\n", reasonStart);
      sections.set(name, {
        output,
        unknown: output.slice(reasonStart, reasonEnd === -1 ? undefined : reasonEnd),
      });
    } else {
      sections.set(name, { output });
    }
    pos = end + endMarker.length - 1;
    if (text.startsWith(marker, pos)) continue;
    pos = text.indexOf(marker, pos);
  }
  throw new ProbeTruncatedError("probe", "output is truncated (no end-of-probe marker)");
}

export function parseContext(nonce: string): ParseContext {
  return {
    parts(output) {
      const marker = `${nonce} mark `;
      const parts: [string, string][] = [];
      const chunks = `\n${output}`.split(`\n${marker}`);
      // chunks[0] is text before the first marker (normally empty).
      for (const chunk of chunks.slice(1)) {
        const nl = chunk.indexOf("\n");
        const label = nl === -1 ? chunk : chunk.slice(0, nl);
        parts.push([label, nl === -1 ? "" : chunk.slice(nl + 1)]);
      }
      return parts;
    },
  };
}
