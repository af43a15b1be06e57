// A file's contents compared with its declaration: as text with a diff, by SHA-256 (a secret, a
// declared hash, or contents over the cap on either side), or by hash and size when not UTF-8.
import { createHash } from "../../crypto.js";
import type { Finding } from "../domain.js";
import { unifiedDiff, utf8Text } from "../file-text.js";
import type { FileStat, FilesLive } from "./parse.js";
import type { FileDeclared } from "./declared.js";

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
const SECRET = "secret: compared by SHA-256; its contents never leave the host and are not shown";

/** Whether the probe sends the file's hash rather than its bytes. */
export function comparedByHash(file: FileDeclared, cap: number): boolean {
  return (
    file.sha256 !== undefined ||
    (file.contents !== undefined && Buffer.byteLength(file.contents) > cap)
  );
}

/** Contents a report cannot show, by hash and size: the form `acceptFile` declares as a sha256. */
const shownByHash = (hex: string, bytes: number) => `sha256:${hex} (${bytes} bytes)`;
export const HASHED = /^sha256:([0-9a-f]{64}) \(\d+ bytes\)$/;

/** Declared contents as a report shows them: the text, or its hash when over the cap. */
export function declaredContents(contents: string, cap: number): string {
  const bytes = Buffer.from(contents, "utf8");
  return bytes.length > cap ? shownByHash(sha256(bytes), bytes.length) : contents;
}

export function compareContents(
  file: FileDeclared,
  stat: FileStat,
  live: FilesLive,
): Finding | undefined {
  const at = (attribute: string): Finding => ({
    key: file.path,
    declared: null,
    live: null,
    path: ["files", file.path, attribute],
  });
  if (file.sha256 !== undefined) {
    const got = live.sha256.get(file.path);
    if (got === undefined || got === file.sha256) return undefined;
    return {
      ...at("sha256"),
      declared: file.sha256,
      live: got,
      detail: file.secret ? SECRET : "compared by SHA-256",
    };
  }
  const want = Buffer.from(file.contents!, "utf8");
  if (want.length > live.cap) {
    const got = live.sha256.get(file.path);
    if (got === undefined || got === sha256(want)) return undefined;
    return {
      ...at("contents"),
      declared: declaredContents(file.contents!, live.cap),
      live: `sha256:${got} (${stat.size} bytes)`,
      detail: `the declared contents are over the ${live.cap}-byte cap for file contents: compared by SHA-256, not shown`,
    };
  }
  const got = live.contents.get(file.path);
  if (got === undefined || got.equals(want)) return undefined;
  if (got.length > live.cap) {
    const hash = live.sha256.get(file.path);
    return {
      ...at("contents"),
      declared: file.contents!,
      live: hash === undefined ? `<${stat.size} bytes, not read>` : shownByHash(hash, stat.size),
      detail: `the live file is over the ${live.cap}-byte cap for file contents: not read, not shown`,
    };
  }
  const text = utf8Text(got);
  if (text === undefined) {
    const live = shownByHash(sha256(got), got.length);
    return {
      ...at("contents"),
      declared: file.contents!,
      live,
      detail: "the live file is not UTF-8 text: no diff",
    };
  }
  return {
    ...at("contents"),
    declared: file.contents!,
    live: text,
    diff: unifiedDiff(file.contents!, text),
  };
}
