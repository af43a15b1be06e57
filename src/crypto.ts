// node:crypto, loaded on first use. It loads every cipher, key and certificate module of Node's
// with it: 4–8 ms of CPU, which an audit paid before its first session where only the probe's
// nonce needs random bytes. Every module takes crypto from here (a lint rule says so).
import { closeSync, openSync, readSync } from "node:fs";
import { createRequire } from "node:module";
import type * as Crypto from "node:crypto";

let loaded: typeof Crypto | undefined;
// A builtin resolves from any base path; "/" keeps import.meta out of the CommonJS bundle.
const nodeCrypto = (): typeof Crypto =>
  (loaded ??= createRequire("/")("node:crypto") as typeof Crypto);

export const createHash: typeof Crypto.createHash = (...args) => nodeCrypto().createHash(...args);

export const x509Certificate = (der: Buffer): Crypto.X509Certificate =>
  new (nodeCrypto().X509Certificate)(der);

/**
 * `size` random bytes: node:crypto's once something has loaded it, until then the kernel's random
 * source read directly (the source node:crypto seeds from), not a reason to load it.
 */
export function randomBytes(size: number): Buffer {
  if (loaded) return loaded.randomBytes(size);
  const bytes = Buffer.alloc(size);
  const fd = openSync("/dev/urandom", "r");
  try {
    let read = 0;
    while (read < size) {
      const got = readSync(fd, bytes, read, size - read, null);
      if (got === 0) throw new Error("/dev/urandom ended");
      read += got;
    }
  } finally {
    closeSync(fd);
  }
  return bytes;
}
