// Text helpers shared by the domains that compare file contents (files, systemd units and
// drop-ins).
import { FILE_HEADERS_ONLY, formatPatch, structuredPatch } from "diff";

/** The unified `-want +got` diff a finding carries. */
export function unifiedDiff(want: string, got: string): string {
  return formatPatch(structuredPatch("want", "got", want, got), FILE_HEADERS_ONLY);
}

/** Bytes from a host as UTF-8 text, or undefined for bytes that are not UTF-8. */
export function utf8Text(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
