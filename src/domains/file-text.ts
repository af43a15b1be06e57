// The text of the files a domain compares (files, systemd units and drop-ins): UTF-8 decoding of
// host bytes and unified diffs, shared by those domains.
import { FILE_HEADERS_ONLY, formatPatch, structuredPatch, type StructuredPatch } from "diff";

/**
 * Edited lines past which a line diff is not searched for. Myers' diff costs (lines x edits): two
 * 100 KB files differing on every line took a minute of the event loop every node shares. Under
 * the bound it costs at most a few hundred milliseconds on the largest file the cap lets through.
 */
export const MAX_DIFF_EDITS = 1000;

/**
 * The unified `-want +got` diff a finding carries. Past MAX_DIFF_EDITS edited lines, one hunk
 * replaces the whole file: still a diff that turns want into got, found in linear time.
 */
export function unifiedDiff(want: string, got: string): string {
  const patch =
    structuredPatch("want", "got", want, got, undefined, undefined, {
      maxEditLength: MAX_DIFF_EDITS,
    }) ?? wholeFileReplaced(want, got);
  return formatPatch(patch, FILE_HEADERS_ONLY);
}

/** One hunk removing every line of want and adding every line of got. */
function wholeFileReplaced(want: string, got: string): StructuredPatch {
  // Against an empty text the diff is found at once; each keeps its "No newline" markers.
  const [removed] = structuredPatch("want", "got", want, "").hunks;
  const [added] = structuredPatch("want", "got", "", got).hunks;
  return {
    oldFileName: "want",
    newFileName: "got",
    oldHeader: undefined,
    newHeader: undefined,
    hunks: [
      {
        oldStart: removed?.oldStart ?? 0,
        oldLines: removed?.oldLines ?? 0,
        newStart: added?.newStart ?? 0,
        newLines: added?.newLines ?? 0,
        lines: [...(removed?.lines ?? []), ...(added?.lines ?? [])],
      },
    ],
  };
}

/** Bytes from a host as UTF-8 text, or undefined for bytes that are not UTF-8. */
export function utf8Text(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
