import { randomBytes } from "node:crypto";
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

export function probeContext(nonce: string, maxFileBytes: number): ProbeContext {
  return {
    lastAudit: `"\${${LAST_AUDIT_VARIABLE}:-}"`,
    quote: shellQuote,
    mark: (label) => `printf '\\n%s mark %s\\n' "$QM_N" ${shellQuote(label)}`,
    unknown: (reason) => `printf '\\n%s unknown %s\\n' "$QM_N" ${shellQuote(reason)}`,
    maxFileBytes,
    awk(fn, call = {}) {
      if (!/^[a-z][a-z0-9_]*$/.test(fn)) throw new Error(`not an awk function name: ${fn}`);
      return [
        ...(call.input === undefined ? [] : [`printf '%s awk-input\\n' "$QM_N"`, call.input]),
        `printf '%s\\n' "$QM_N awk ${fn}" ${[...(call.values ?? []), '"$QM_N awk-run"'].join(" ")}`,
      ].join("\n");
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
 * The shared awk's program: the dispatch, a call by name of each function the sections call, and
 * the functions those call, as they do. mawk compiles the whole program on every run (the 18 KB of
 * every section's functions, about 0.7 ms here): what no call reaches (accounts' sudoers reading
 * where no sudoers is declared) is left out. A section's `awk` is function definitions, each
 * starting a line; a function calls another as `name(` (awk allows no space there).
 */
function sharedAwk(sections: readonly ProbeSection[]): string {
  const definitions = new Map<string, string>();
  for (const text of [...RECORDS, ...sections.flatMap((s) => s.awk!.split(/^(?=function )/m))]) {
    const name = /^function ([A-Za-z_][A-Za-z0-9_]*)\(/.exec(text)?.[1];
    if (name === undefined) throw new Error(`not an awk function definition: ${text.slice(0, 40)}`);
    definitions.set(name, text.replace(/\n$/, ""));
  }
  const called = new Set(
    sections.flatMap((s) =>
      [...s.script.matchAll(/"\$QM_N awk ([a-z][a-z0-9_]*)"/g)].map((m) => m[1]!),
    ),
  );
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

export function buildProbe(nonce: string, sections: ProbeSection[]): Probe {
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
  const shared = sections.filter(calls);
  const body = [
    ...(shared.length
      ? [`{\n${framed(shared)}\n} | awk -v qm_n="$QM_N" '${sharedAwk(shared)}'`]
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
