import { createHash } from "../../crypto.js";

// An authorized key is shown only as its fingerprint, computed here from the key blob the host sent,
// as `ssh-keygen -lf` prints it: `SHA256:` and the unpadded base64 of the blob's SHA-256.

/** The key types OpenSSH accepts in authorized_keys, certificates included. */
export const KEY_TYPE =
  /^(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp(?:256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com|ssh-ed448)(?:-cert-v01@openssh\.com)?$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** A fingerprint as a manifest declares it. */
export const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}$/;

/**
 * The fingerprint of `type blob`, or undefined when the blob is not base64 or does not start with
 * its own type (what sshd would refuse too).
 */
export function fingerprint(type: string, blob: string): string | undefined {
  if (!KEY_TYPE.test(type) || !BASE64.test(blob) || blob.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(blob, "base64");
  const length = bytes.length >= 4 ? bytes.readUInt32BE(0) : -1;
  if (length !== type.length || bytes.subarray(4, 4 + length).toString("latin1") !== type)
    return undefined;
  return `SHA256:${createHash("sha256").update(bytes).digest("base64").replace(/=+$/, "")}`;
}
