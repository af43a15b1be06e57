// Version order as each package manager itself defines it, so a declared constraint means on the
// auditor what it means on the host. Each comparison is linear in the lengths of its versions.
import type { PackageFormat } from "./parse.js";

const isDigit = (c: string | undefined) => c !== undefined && c >= "0" && c <= "9";
const isAlpha = (c: string | undefined) =>
  c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z"));
const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);

/**
 * dpkg's `order()`: `~` before the end, the end and digits level, letters before other characters.
 */
function dpkgOrder(c: string | undefined): number {
  if (c === undefined || isDigit(c)) return 0;
  if (isAlpha(c)) return c.charCodeAt(0);
  if (c === "~") return -1;
  return c.charCodeAt(0) + 256;
}

/** dpkg's `verrevcmp` (lib/dpkg/version.c) on an upstream version or a revision. */
function verrevcmp(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    let firstDiff = 0;
    while ((i < a.length && !isDigit(a[i])) || (j < b.length && !isDigit(b[j]))) {
      const ac = dpkgOrder(a[i]);
      const bc = dpkgOrder(b[j]);
      if (ac !== bc) return sign(ac - bc);
      i++;
      j++;
    }
    while (a[i] === "0") i++;
    while (b[j] === "0") j++;
    while (isDigit(a[i]) && isDigit(b[j])) {
      if (!firstDiff) firstDiff = a.charCodeAt(i) - b.charCodeAt(j);
      i++;
      j++;
    }
    if (isDigit(a[i])) return 1;
    if (isDigit(b[j])) return -1;
    if (firstDiff) return sign(firstDiff);
  }
  return 0;
}

interface Evr {
  epoch: number;
  version: string;
  release: string | undefined;
}

/**
 * `[epoch:]version[-release]`: the epoch ends at the first colon, the release starts after the last
 * hyphen.
 */
function splitEvr(text: string): Evr {
  const colon = text.indexOf(":");
  const epoch = colon > 0 && /^\d+$/.test(text.slice(0, colon)) ? Number(text.slice(0, colon)) : 0;
  const rest = colon > 0 ? text.slice(colon + 1) : text;
  const hyphen = rest.lastIndexOf("-");
  return hyphen === -1
    ? { epoch, version: rest, release: undefined }
    : { epoch, version: rest.slice(0, hyphen), release: rest.slice(hyphen + 1) };
}

/** `dpkg --compare-versions` order. A missing revision is the empty revision, as dpkg reads it. */
export function compareDpkg(a: string, b: string): number {
  const x = splitEvr(a);
  const y = splitEvr(b);
  return (
    sign(x.epoch - y.epoch) ||
    verrevcmp(x.version, y.version) ||
    verrevcmp(x.release ?? "", y.release ?? "")
  );
}

const isAlnum = (c: string | undefined) => isDigit(c) || isAlpha(c);

/** rpm's `rpmvercmp` (rpmio/rpmvercmp.c), with `~` before everything and `^` after the end only. */
export function rpmvercmp(a: string, b: string): number {
  if (a === b) return 0;
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    while (i < a.length && !isAlnum(a[i]) && a[i] !== "~" && a[i] !== "^") i++;
    while (j < b.length && !isAlnum(b[j]) && b[j] !== "~" && b[j] !== "^") j++;
    if (a[i] === "~" || b[j] === "~") {
      if (a[i] !== "~") return 1;
      if (b[j] !== "~") return -1;
      i++;
      j++;
      continue;
    }
    if (a[i] === "^" || b[j] === "^") {
      if (i >= a.length) return -1;
      if (j >= b.length) return 1;
      if (a[i] !== "^") return 1;
      if (b[j] !== "^") return -1;
      i++;
      j++;
      continue;
    }
    if (i >= a.length || j >= b.length) break;
    const numeric = isDigit(a[i]);
    const inSegment = numeric ? isDigit : isAlpha;
    let endA = i;
    let endB = j;
    while (inSegment(a[endA])) endA++;
    while (inSegment(b[endB])) endB++;
    // A numeric segment is newer than an alphabetic one.
    if (endB === j) return numeric ? 1 : -1;
    let segA = a.slice(i, endA);
    let segB = b.slice(j, endB);
    if (numeric) {
      segA = segA.replace(/^0+/, "");
      segB = segB.replace(/^0+/, "");
      if (segA.length !== segB.length) return segA.length > segB.length ? 1 : -1;
    }
    if (segA !== segB) return segA < segB ? -1 : 1;
    i = endA;
    j = endB;
  }
  if (i >= a.length && j >= b.length) return 0;
  return i < a.length ? 1 : -1;
}

/**
 * rpm's own reading (parseEVR in rpmio): an epoch is the leading digits when a colon ends them, any
 * number of them, compared as rpmvercmp compares digits (`:1` has epoch 0, `1a:2` has none and is
 * all version).
 */
function splitRpmEvr(text: string): { epoch: string; version: string; release?: string } {
  const epoch = /^(\d*):/.exec(text);
  const rest = epoch ? text.slice(epoch[0].length) : text;
  const hyphen = rest.lastIndexOf("-");
  return {
    epoch: epoch?.[1] || "0",
    version: hyphen === -1 ? rest : rest.slice(0, hyphen),
    ...(hyphen === -1 ? {} : { release: rest.slice(hyphen + 1) }),
  };
}

/**
 * rpm's EVR order. A side without a release compares on epoch and version only, as rpm matches
 * a dependency like `>= 1.2` against any release of 1.2.
 */
export function compareRpm(a: string, b: string): number {
  const x = splitRpmEvr(a);
  const y = splitRpmEvr(b);
  const byVersion = rpmvercmp(x.epoch, y.epoch) || rpmvercmp(x.version, y.version);
  if (byVersion || x.release === undefined || y.release === undefined) return byVersion;
  return rpmvercmp(x.release, y.release);
}

// apk's suffixes in order; a version without one sorts between `rc` and `cvs`.
const APK_SUFFIXES = ["alpha", "beta", "pre", "rc", "", "cvs", "svn", "git", "hg", "p"];

interface ApkVersion {
  numbers: string[];
  letter: string;
  suffixes: [rank: number, number: number][];
  revision: number;
}

/**
 * `1.2.3b_rc2-r4`: numbers, an optional letter, `_suffix[N]` parts, `-rN`; undefined when not apk's
 * form.
 */
function parseApkVersion(text: string): ApkVersion | undefined {
  const m = /^(\d+(?:\.\d+)*)([a-z]?)((?:_[a-z]+\d*)*)(?:-r(\d+))?$/.exec(text);
  if (!m) return undefined;
  const suffixes: [number, number][] = [];
  for (const part of m[3]!.split("_").slice(1)) {
    const [, name, digits] = /^([a-z]+)(\d*)$/.exec(part)!;
    const rank = APK_SUFFIXES.indexOf(name!);
    if (rank === -1 || name === "") return undefined;
    suffixes.push([rank, Number(digits || 0)]);
  }
  return { numbers: m[1]!.split("."), letter: m[2]!, suffixes, revision: Number(m[4] ?? 0) };
}

/**
 * apk-tools' version order; text that is not a valid apk version falls back to rpm's segment order.
 */
export function compareApk(a: string, b: string): number {
  const x = parseApkVersion(a);
  const y = parseApkVersion(b);
  if (!x || !y) return rpmvercmp(a, b);
  for (let k = 0; k < Math.min(x.numbers.length, y.numbers.length); k++) {
    const [p, q] = [x.numbers[k]!, y.numbers[k]!];
    // After the first component, a leading zero makes apk compare as a decimal fraction.
    const fractional = k > 0 && (p.startsWith("0") || q.startsWith("0"));
    const order = fractional ? (p < q ? -1 : p > q ? 1 : 0) : sign(Number(p) - Number(q));
    if (order) return order;
  }
  if (x.numbers.length !== y.numbers.length) return x.numbers.length > y.numbers.length ? 1 : -1;
  if (x.letter !== y.letter) return x.letter < y.letter ? -1 : 1;
  const none: [number, number] = [APK_SUFFIXES.indexOf(""), 0];
  for (let k = 0; k < Math.max(x.suffixes.length, y.suffixes.length); k++) {
    const [rx, nx] = x.suffixes[k] ?? none;
    const [ry, ny] = y.suffixes[k] ?? none;
    if (rx !== ry) return sign(rx - ry);
    if (nx !== ny) return sign(nx - ny);
  }
  return sign(x.revision - y.revision);
}

export const COMPARE_VERSIONS: Record<PackageFormat, (a: string, b: string) => number> = {
  dpkg: compareDpkg,
  rpm: compareRpm,
  apk: compareApk,
};
