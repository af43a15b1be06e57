// known_hosts as manifest-diff shows it: which keys are pinned for which host pattern.
import { createHash } from "../crypto.js";
import { compareText } from "../report/formats/common.js";

/**
 * known_hosts as host pattern -> its keys, each shown as ssh-keygen -l shows it (`ssh-ed25519
 * SHA256:...`), with a marker (`@cert-authority`, `@revoked`) when the line has one.
 */
export function pinnedKeys(text: string | undefined): Map<string, string[]> {
  const keys = new Map<string, Set<string>>();
  for (const raw of (text ?? "").split(/\r?\n/)) {
    const fields = raw.trim().split(/\s+/);
    if (!fields[0] || fields[0].startsWith("#")) continue;
    const marker = fields[0].startsWith("@") ? fields.shift() : undefined;
    const [hosts, type, blob] = fields;
    if (!hosts || !type) continue;
    const fingerprint =
      blob && /^[A-Za-z0-9+/]+=*$/.test(blob) ? sshFingerprint(blob) : (blob ?? "(no key)");
    const shown = [marker, type, fingerprint].filter(Boolean).join(" ");
    for (const host of hosts.split(",")) {
      const shownFor = keys.get(host);
      if (shownFor) shownFor.add(shown);
      else keys.set(host, new Set([shown]));
    }
  }
  // Sorted once, not at every line: a host on many lines stays linear.
  return new Map([...keys].map(([host, shown]) => [host, [...shown].sort(compareText)]));
}

/** `SHA256:…` as ssh-keygen -l prints it: the unpadded base64 SHA-256 of the key blob. */
const sshFingerprint = (blob: string) =>
  `SHA256:${createHash("sha256").update(Buffer.from(blob, "base64")).digest("base64").replace(/=+$/, "")}`;
