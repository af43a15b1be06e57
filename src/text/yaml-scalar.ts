// YAML that every mainstream reader reads the same: the `yaml` library (1.2 and 1.1) and PyYAML
// (YAML 1.1: Ansible, yamllint, most CI tools). A string is written plain only when all of them
// read that plain text back as the same string; otherwise double-quoted with escapes.
import { Document, isScalar, parseDocument, Scalar, visit } from "yaml";
import { defuseRunnerCommands, visible } from "./escape.js";

/**
 * Characters never written raw: controls (NEL is a line break to YAML 1.1), format characters
 * (bidi overrides, zero-width, BOM), line separators, lone surrogates and U+FFFE/U+FFFF (outside
 * YAML's printable set). Tab and newline are handled by each writer.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029\ufffe\uffff]/u;
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, "gu");
const UNPRINTABLE_BUT_TAB_NEWLINE = /(?![\t\n])[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029\ufffe\uffff]/gu;

/** `\uXXXX` per UTF-16 code unit: valid in JSON and in YAML double-quoted scalars alike. */
const unicodeEscapes = (char: string): string =>
  Array.from(
    { length: char.length },
    (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`,
  ).join("");

/** Whether text holds a character that must not be written raw. */
export const hasUnprintable = (text: string): boolean => UNPRINTABLE.test(text);

/**
 * JSON with every unprintable character as a `\u` escape (JSON.stringify leaves DEL, C1 controls,
 * bidi controls and line separators raw). A JSON string is also a YAML double-quoted scalar.
 */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(UNPRINTABLE_ALL, unicodeEscapes);
}

// PyYAML's implicit resolvers (resolver.py): a plain scalar matching one is not a string to it.
// `=` (tag:yaml.org,2002:value) and `<<` (merge) make PyYAML fail outright.
const PYYAML_IMPLICIT = [
  /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/,
  /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/,
  /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/,
  /^(?:<<)$/,
  /^(?:~|null|Null|NULL|)$/,
  /^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$/,
  /^(?:=)$/,
];

// A plain scalar here starts with no indicator (`-?:` only before a non-blank), holds no tab,
// no doubled, leading or trailing space, no ` #` or `: `: narrower than YAML allows, so that
// readers' differences around indicators never matter.
const PLAIN_SAFE = /^(?![-?:](?:\s|$))[^\s,\[\]{}#&*!|>'"%@`](?:\S| (?! |$|#))*$/u;

/** What the patterns alone tell: `text` may be written plain, if the readers agree. */
function mayBePlain(text: string, context: "block" | "flow"): boolean {
  if (!PLAIN_SAFE.test(text) || hasUnprintable(text) || PYYAML_IMPLICIT.some((re) => re.test(text)))
    return false;
  if (context === "flow" && /[,:?\[\]{}]/.test(text)) return false;
  return !/: |:$/.test(text);
}

/** The texts that the `yaml` library at `version` reads back plain as themselves, each a line. */
function readBack(texts: readonly string[], version: "1.1" | "1.2"): string[] {
  // The keys are distinct: checking that they are costs the square of their number.
  const doc = parseDocument(texts.map((text, i) => `k${i}: ${text}`).join("\n"), {
    version,
    uniqueKeys: false,
  });
  // A line the reader refuses (none the patterns let through is known to) quotes them all, which
  // every reader reads right.
  if (doc.errors.length || doc.warnings.length) return [];
  const read = doc.toJS() as Record<string, unknown>;
  return texts.filter((text, i) => read[`k${i}`] === text);
}

// The readers' verdicts on texts asked before: a fleet's node names recur in every ticket written.
const VERDICTS = { block: new Map<string, boolean>(), flow: new Map<string, boolean>() };
const MAX_VERDICTS = 1_000_000;

/**
 * Which of `texts`, written plain, read back as themselves in the `yaml` library (1.2, 1.1) and in
 * PyYAML: one parse per version for those not asked before (each holds one line, so the lines
 * never meet).
 */
export function plainStrings(
  texts: Iterable<string>,
  context: "block" | "flow" = "block",
): Set<string> {
  const verdicts = VERDICTS[context];
  const plain = new Set<string>();
  const unasked: string[] = [];
  for (const text of new Set(texts)) {
    const verdict = verdicts.get(text);
    if (verdict === undefined) {
      if (mayBePlain(text, context)) unasked.push(text);
    } else if (verdict) plain.add(text);
  }
  if (!unasked.length) return plain;
  const in12 = readBack(unasked, "1.2");
  const read = new Set(in12.length ? readBack(in12, "1.1") : []);
  if (verdicts.size + unasked.length > MAX_VERDICTS) verdicts.clear();
  for (const text of unasked) {
    verdicts.set(text, read.has(text));
    if (read.has(text)) plain.add(text);
  }
  return plain;
}

/**
 * `text` written plain reads back as the string `text` in the `yaml` library (1.2, 1.1) and in
 * PyYAML.
 */
export const readsAsPlainString = (text: string, context: "block" | "flow" = "block"): boolean =>
  plainStrings([text], context).has(text);

/** Whether a line of `text` holds what the Actions runner reads as a command. */
const holdsRunnerCommand = (text: string) => defuseRunnerCommands(text) !== text;

/**
 * A node-spec-like value as YAML text every reader reads the same: strings that are not safely
 * plain (and keys alike) double-quoted, multi-line printable text as block scalars, and no
 * unprintable character raw anywhere. Nor any runner command: text holding one is double-quoted,
 * where the escape that defuses it means the character it replaces. `comments` are written beside
 * the scalar at their path, escaped to one line; a path with no scalar gets none.
 */
export function stringifyPortable(
  value: unknown,
  comments: readonly { path: readonly (string | number)[]; text: string }[] = [],
): string {
  const doc = new Document(value);
  for (const { path, text } of comments) {
    const node = doc.getIn(path, true);
    if (isScalar(node)) node.comment = ` ${visible(text)}`;
  }
  const strings: Scalar<string>[] = [];
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === "string") strings.push(node as Scalar<string>);
    },
  });
  const plain = plainStrings(strings.map((node) => node.value));
  for (const node of strings) {
    const text = node.value;
    const multiLinePrintable =
      text.includes("\n") &&
      !hasUnprintable(text.replace(/[\t\n]/g, "")) &&
      !/[ \t]\n|[ \t]$/.test(text);
    if (holdsRunnerCommand(text) || (!multiLinePrintable && !plain.has(text)))
      node.type = Scalar.QUOTE_DOUBLE;
  }
  // The unprintable characters left are inside double-quoted scalars, where an escape means them.
  return defuseRunnerCommands(
    doc.toString({ lineWidth: 0 }).replace(UNPRINTABLE_BUT_TAB_NEWLINE, unicodeEscapes),
  );
}
