import { createHash } from "../../crypto.js";
import * as z from "zod";
import { keyedList, pathIn, within, type Domain, type Finding } from "../domain.js";
import { unifiedDiff } from "../file-text.js";
import { fileCause } from "./cause.js";
import { compareContents, comparedByHash, declaredContents, HASHED } from "./contents.js";
import { FileDeclared } from "./declared.js";
import { ManifestEditError } from "../../errors.js";
import {
  LINKED_COMPONENT,
  PRINT_LINK,
  canonicalPath,
  linkedValue,
  type LinkedComponent,
} from "../no-follow.js";
import { STAT_FORMAT, isRegular, parseFiles, type FileStat, type FilesLive } from "./parse.js";

export const FilesDeclared = keyedList(FileDeclared, "path");
export type FilesDeclared = z.infer<typeof FilesDeclared>;

function describe(stat: FileStat): string {
  return `${stat.type}, ${stat.size} bytes`;
}

const isSymlink = (stat: FileStat) => stat.type === "symbolic link";
/** Owned by root and not readable by others: what only root (or its group) may read. */
const rootOnly = (stat: FileStat) => stat.uid === "0" && (parseInt(stat.mode, 8) & 0o004) === 0;
/** A snapshot's guess at a secret's hash, replaced by the live one. */
const UNKNOWN_SHA256 = "0".repeat(64);
const LINK = /^symlink -> ([^]*)$/;

/**
 * A symlink where a file is declared (its target neither read nor hashed), or something else where
 * a symlink is.
 */
function typeFinding(file: FileDeclared, stat: FileStat, target: string | undefined): Finding {
  const link = target === undefined ? "symlink" : `symlink -> ${target}`;
  return {
    key: file.path,
    declared: file.link === undefined ? "file" : `symlink -> ${file.link}`,
    live: isSymlink(stat) ? link : isRegular(stat) ? "file" : stat.type,
    path: pathIn(files, file.path, "type"),
    detail: isSymlink(stat)
      ? "a symlink where a file is declared: not followed, its target is neither read nor hashed"
      : `a ${stat.type} where a symlink is declared`,
  };
}

/** A symlinked folder on the way to a declared path: nothing behind it is looked at. */
function parentFinding(file: FileDeclared, parent: LinkedComponent): Finding {
  return {
    key: file.path,
    declared: file.absent ? "absent" : file.link === undefined ? "file" : `symlink -> ${file.link}`,
    live: linkedValue(parent),
    path: pathIn(files, file.path, "type"),
    detail: `${parent.component} is a symlink: not followed, nothing behind it looked at (declare the path without links)`,
  };
}

/** Owner or group as declared: by name, or by numeric id. */
function account(want: string, name: string, id: string): string {
  return /^\d+$/.test(want) || name === "UNKNOWN" ? id : name;
}

/**
 * A file's declaration once the live file is accepted: what can be known of it without its bytes.
 */
function acceptFile(
  file: FileDeclared,
  attribute: string | undefined,
  finding: Finding,
): FileDeclared {
  // The file is gone: it is declared absent. A file that must be absent but exists: declared
  // present, nothing more.
  if (attribute === undefined) return { path: file.path, absent: true };
  if (attribute === "absent") return { path: file.path };
  if (attribute === "mode" || attribute === "owner" || attribute === "group")
    return { ...file, [attribute]: String(finding.live) };
  // The path's type changed: what is known of it is the link's target, or that it is a file.
  const target = attribute === "type" ? LINK.exec(String(finding.live))?.[1] : undefined;
  if (target !== undefined) return { path: file.path, link: target };
  if (attribute === "type" && finding.live === "file") return { path: file.path };
  if (attribute === "link") return { ...file, link: String(finding.live) };
  const live = String(finding.live);
  if (attribute === "sha256" && /^[0-9a-f]{64}$/.test(live)) return { ...file, sha256: live };
  // A diff means the audit read the live text, which is then written as is, whatever it looks like.
  if (attribute === "contents" && finding.diff !== undefined) return { ...file, contents: live };
  const byHash = HASHED.exec(live);
  if (attribute === "contents" && byHash) {
    const { contents: _, ...rest } = file;
    return { ...rest, sha256: byHash[1]! };
  }
  throw new ManifestEditError(
    `the live ${file.path} (${live}) cannot be written into the manifest`,
  );
}

/**
 * `qm_read PATH CANONICAL`: prints the first `bytes` bytes of PATH only if PATH itself is a regular
 * file. The file is opened first, then the kernel's name for the opened file must be PATH as
 * written canonically: a symlink swapped in after the tests, at PATH or at a folder above it, is
 * never read through. The test before opening keeps fifos and devices from being opened; a swap to
 * one between the test and the open can only stall this node's probe.
 */
function readRegularFile(bytes: number): string {
  return [
    "qm_read() {",
    '  [ -f "$1" ] && [ ! -h "$1" ] || return 1',
    `  { [ "$(readlink /proc/self/fd/3)" = "$2" ] && head -c ${bytes} <&3; } 2>/dev/null 3<"$1"`,
    "}",
  ].join("\n");
}

export const files: Domain<FilesDeclared, FilesLive, "files"> = {
  name: "files",
  specPath: ["files"],
  schema: FilesDeclared,
  listKey: "path",
  snapshotsDeclared: true,
  severity: "high",
  onDrift: "accept",
  keyPrefixes: ["/"],
  remediation: "Restore the file from the manifest, or accept the live file into the manifest.",
  probe(declared, ctx) {
    // Nothing declared (a snapshot): an empty but well-formed section.
    if (!declared?.length)
      return [ctx.mark(`cap ${ctx.maxFileBytes}`), ctx.mark("paths"), ctx.mark("stat")].join("\n");
    const all = declared.map((f) => ctx.quote(f.path)).join(" ");
    // $qm_s<i> is set for a path with no symlink among its folders, empty for the rest: only such a
    // path is looked at.
    const index = new Map(declared.map((f, i) => [f.path, i]));
    const looked = (f: FileDeclared) => `[ -n "$qm_s${index.get(f.path)}" ]`;
    // Only non-secret files declared by contents are read, each through qm_read, so a huge file
    // costs cap+1 bytes.
    const read = declared.filter(
      (f) => f.contents !== undefined && !f.secret && !comparedByHash(f, ctx.maxFileBytes),
    );
    const hashed = declared.filter((f) => comparedByHash(f, ctx.maxFileBytes));
    const overCap = `-maxdepth 0 -type f -size +${ctx.maxFileBytes}c`;
    return [
      ctx.mark(`cap ${ctx.maxFileBytes}`),
      ctx.mark("paths"),
      `printf '%s\\n' ${all}`,
      LINKED_COMPONENT,
      // A symlinked folder on the way is reported (the link's own target text) and nothing behind
      // it is looked at: no stat, no hash, no read.
      "set --",
      ...declared.map((f, i) => {
        const canonical = canonicalPath(f.path);
        const parent = ctx.quote(canonical.slice(0, canonical.lastIndexOf("/")));
        const linked = `${ctx.mark(`parent ${f.path}`)}; ${PRINT_LINK}`;
        return `qm_s${i}=; if qm_linked ${parent}; then ${linked}; else qm_s${i}=1; set -- "$@" ${ctx.quote(f.path)}; fi`;
      }),
      ctx.mark("stat"),
      // No -L anywhere: a symlink at a declared path is described itself, its target never looked
      // at.
      `[ $# -eq 0 ] || stat -c '${STAT_FORMAT}' -- "$@" 2>/dev/null`,
      // A symlink's own target text; a path stat cannot see gets a stat of its own, so its error
      // (missing, or permission denied) needs no matching to a file name.
      ...declared.map((f) => {
        const q = ctx.quote(f.path);
        const link = `${ctx.mark(`link ${f.path}`)}; readlink -- ${q}`;
        const missing = `${ctx.mark(`missing ${f.path}`)}; stat -c '${STAT_FORMAT}' -- ${q} 2>&1`;
        return `if ! ${looked(f)}; then :; elif [ -h ${q} ]; then ${link}; elif [ ! -e ${q} ]; then ${missing}; fi`;
      }),
      // Only regular files that are not symlinks are hashed. A swap to a symlink between this test
      // and sha256sum opening the file remains possible: it could send a target's hash, never its
      // contents.
      ...(hashed.length || read.length ? [ctx.mark("sha256")] : []),
      ...(hashed.length
        ? [
            "set --",
            ...hashed.map((f) => {
              const q = ctx.quote(f.path);
              return `${looked(f)} && [ -f ${q} ] && [ ! -h ${q} ] && set -- "$@" ${q}`;
            }),
            `[ $# -eq 0 ] || sha256sum -- "$@" 2>&1`,
          ]
        : []),
      // A file read for its contents but over the cap is hashed on the host, so accepting it can
      // declare its sha256; find's -type f, without -L, skips a symlink.
      ...(read.length
        ? [
            "set --",
            ...read.map((f) => `${looked(f)} && set -- "$@" ${ctx.quote(f.path)}`),
            `[ $# -eq 0 ] || find "$@" ${overCap} -exec sha256sum -- {} + 2>/dev/null`,
            readRegularFile(ctx.maxFileBytes + 1),
          ]
        : []),
      ...read.map((f) => {
        const q = ctx.quote(f.path);
        const unreadable = ctx.mark(`unreadable ${f.path}`);
        const contents = ctx.mark(`contents ${f.path}`);
        return `if ${looked(f)}; then\n${contents}\nqm_read ${q} ${ctx.quote(canonicalPath(f.path))} || ${unreadable}\nfi`;
      }),
      "true",
    ].join("\n");
  },
  parse(output, ctx) {
    return parseFiles(ctx.parts(output));
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    for (const file of declared) {
      const parent = live.parents.get(file.path);
      if (parent) {
        findings.push(parentFinding(file, parent));
        continue;
      }
      const stat = live.files.get(file.path);
      if (stat === undefined) continue; // could not be looked at: the reason is in live.unknown
      if (file.absent) {
        if (stat) {
          findings.push({
            key: file.path,
            declared: "absent",
            live: "present",
            path: pathIn(this, file.path, "absent"),
            detail: `must not exist, but is a ${describe(stat)}`,
          });
        }
        continue;
      }
      if (stat === null) {
        const showable =
          file.contents !== undefined &&
          !file.secret &&
          Buffer.byteLength(file.contents) <= live.cap;
        findings.push({
          key: file.path,
          declared: "present",
          live: null,
          path: pathIn(this, file.path),
          detail: "the file does not exist",
          ...(showable ? { diff: unifiedDiff(file.contents!, "") } : {}),
        });
        continue;
      }
      // A symlink where anything else is declared, or the reverse: nothing more compares (no target
      // is read).
      if (isSymlink(stat) !== (file.link !== undefined)) {
        findings.push(typeFinding(file, stat, live.links.get(file.path)));
        continue;
      }
      const target = live.links.get(file.path);
      if (file.link !== undefined && target !== undefined && target !== file.link) {
        findings.push({
          key: file.path,
          declared: file.link,
          live: target,
          path: pathIn(this, file.path, "link"),
        });
      }
      if (file.contents !== undefined || file.sha256 !== undefined) {
        const finding = isRegular(stat)
          ? compareContents(file, stat, live)
          : {
              key: file.path,
              declared: file.sha256 ?? declaredContents(file.contents!, live.cap),
              live: `<${stat.type}>`,
              path: pathIn(this, file.path, file.sha256 !== undefined ? "sha256" : "contents"),
              detail: `not a regular file: a ${stat.type}`,
            };
        if (finding) findings.push(finding);
      }
      const attribute = (
        name: "mode" | "owner" | "group",
        want: string | undefined,
        got: string,
      ) => {
        if (want === undefined || want === got) return;
        findings.push({
          key: `${file.path}:${name}`,
          declared: want,
          live: got,
          path: pathIn(this, file.path, name),
        });
      };
      attribute("mode", file.mode, stat.mode);
      if (file.owner !== undefined)
        attribute("owner", file.owner, account(file.owner, stat.owner, stat.uid));
      if (file.group !== undefined)
        attribute("group", file.group, account(file.group, stat.group, stat.gid));
    }
    return findings;
  },
  accept(declared, finding) {
    const [path, attribute] = within(this, finding.path) as [string, string | undefined];
    return declared.map((file) =>
      file.path === path ? acceptFile(file, attribute, finding) : file,
    );
  },
  records(declared) {
    return { files: declared.map((file) => file.path) };
  },
  cause: fileCause,
  snapshotAsks(declared) {
    // A guess at each attribute: where the live file differs, accepting it fills the live value.
    // A secret is asked for its hash, never its contents.
    return declared.map((file) =>
      Object.keys(file).some((k) => k !== "path" && k !== "secret")
        ? file
        : {
            ...file,
            ...(file.secret ? { sha256: UNKNOWN_SHA256 } : { contents: "" }),
            mode: "0644",
            owner: "root",
            group: "root",
          },
    );
  },
  snapshotKeeps(accepted, live) {
    return accepted.map((file) => {
      // The guess stands: the host could not hash the file.
      if (file.sha256 === UNKNOWN_SHA256) {
        const { sha256: _, ...rest } = file;
        return rest;
      }
      const stat = live.files.get(file.path);
      if (file.contents === undefined || !(file.secret || (stat && rootOnly(stat)))) return file;
      // Readable by root alone (or marked secret): declared by its hash, its contents never
      // written into a manifest.
      const { contents: _, ...rest } = file;
      const read = live.contents.get(file.path);
      const hash =
        read !== undefined && read.length <= live.cap
          ? createHash("sha256").update(read).digest("hex")
          : live.sha256.get(file.path);
      return hash === undefined ? rest : { ...rest, sha256: hash };
    });
  },
  snapshot() {
    // Files are audited only where declared: a host has nothing to offer unasked.
    return undefined;
  },
  watchTargets(declared) {
    return { paths: declared.map((file) => file.path), directories: [], polled: false };
  },
};
