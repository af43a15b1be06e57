import { x509Certificate } from "../../crypto.js";
import { ProbeParseError } from "../../errors.js";
import { parseLink, type LinkedComponent } from "../no-follow.js";
import { utf8 } from "../../text/utf8.js";

// The certificates section parsed: which declared paths are folders (and which files they hold),
// what stands where a file or folder is declared, and each file read as its certificates, decoded
// here (never on the host) with Node's own X.509 parser.

/** Most subject alternative names kept of one certificate. */
export const MAX_NAMES = 100;

/** One certificate, as its checks read it. */
export interface CertificateInfo {
  /** RFC 2253-like, in the certificate's order: `CN=web.example.net, O=Acme`. */
  subject: string;
  issuer: string;
  /** Subject alternative names, without their type: `web.example.net`, `10.0.0.1`. */
  names: string[];
  /** Epoch milliseconds. */
  notBefore: number;
  notAfter: number;
}

/** What a file read holds: its certificates, or why none are checked. */
export type FileLive =
  | { certificates: CertificateInfo[] }
  | { refused: "private key" | "not a certificate" | "over the cap" };

/** What stands at a declared path that is no file or folder: missing, a symlink, or other. */
export type PathLive = LinkedComponent | "other" | null;

export interface CertificatesLive {
  /** The largest file read, in bytes. */
  cap: number;
  /** Declared folders: the certificate files found in them (up to the bound). */
  folders: Map<string, Set<string>>;
  /** Declared folders with more certificate files than were read: how many more. */
  more: Map<string, number>;
  /**
   * Declared paths that are no file or folder: `null` when missing, a symlink (never followed),
   * or what the path is (`other`).
   */
  other: Map<string, PathLive>;
  /** Every file read, by path. */
  files: Map<string, FileLive>;
  /** Files the audit user could not read: not drift. */
  unknown: string[];
}

/** `a\nb` as X509Certificate gives a subject: one attribute a line; joined with `, `. */
const distinguishedName = (text: string) => text.split("\n").join(", ");

// `DNS:a, IP Address:10.0.0.1`; Node quotes a value holding a comma as a JSON string.
const SAN = /(?:^|, )[A-Za-z ]+:("(?:[^"\\]|\\.)*"|[^,]*)/g;

function altNames(text: string | undefined): string[] {
  if (!text) return [];
  const names: string[] = [];
  for (const [, value] of text.matchAll(SAN)) {
    if (names.length === MAX_NAMES) break;
    names.push(value!.startsWith('"') ? (JSON.parse(value!) as string) : value!);
  }
  return names;
}

/** One PEM block's base64 body as a certificate; undefined when it is none. */
function certificate(base64: string): CertificateInfo | undefined {
  try {
    const cert = x509Certificate(Buffer.from(base64, "base64"));
    const notBefore = Date.parse(cert.validFrom);
    const notAfter = Date.parse(cert.validTo);
    if (Number.isNaN(notBefore) || Number.isNaN(notAfter)) return undefined;
    return {
      subject: distinguishedName(cert.subject),
      issuer: distinguishedName(cert.issuer),
      names: altNames(cert.subjectAltName),
      notBefore,
      notAfter,
    };
  } catch {
    return undefined;
  }
}

const BEGIN = "-----BEGIN CERTIFICATE-----";
const END = "-----END CERTIFICATE-----";

/** The blocks the probe sent of one file, decoded; a file with none, or a bad one, is refused. */
export function readCertificates(text: string): FileLive {
  const certificates: CertificateInfo[] = [];
  let body: string[] | undefined;
  for (const line of text.split("\n")) {
    if (line === BEGIN) body = [];
    else if (line === END && body) {
      const cert = certificate(body.join(""));
      if (!cert) return { refused: "not a certificate" };
      certificates.push(cert);
      body = undefined;
    } else if (body) body.push(line);
  }
  return certificates.length ? { certificates } : { refused: "not a certificate" };
}

const LABEL = /^(cap|link|folder|closed|more|other|missing|file|over|private|unreadable) ([^]*)$/;

export function parseCertificates(parts: [string, string][]): CertificatesLive {
  const live: CertificatesLive = {
    cap: NaN,
    folders: new Map(),
    more: new Map(),
    other: new Map(),
    files: new Map(),
    unknown: [],
  };
  for (const [label, text] of parts) {
    const m = LABEL.exec(label);
    if (!m) throw new ProbeParseError("certificates", `unexpected part "${label.slice(0, 80)}"`);
    const kind = m[1]!;
    const path = utf8(m[2]!);
    if (kind === "cap") live.cap = Number(path);
    else if (kind === "link") live.other.set(path, parseLink(text));
    else if (kind === "folder") live.folders.set(path, new Set());
    else if (kind === "more") live.more.set(path, Number(text.trim()));
    else if (kind === "other") live.other.set(path, "other");
    else if (kind === "closed")
      live.unknown.push(`${path}: a folder the audit user cannot list (root-only: become: sudo)`);
    else if (kind === "missing") live.other.set(path, null);
    else {
      if (kind === "over") live.files.set(path, { refused: "over the cap" });
      else if (kind === "private") live.files.set(path, { refused: "private key" });
      else if (kind === "file") live.files.set(path, readCertificates(text));
      else live.unknown.push(`${path}: not readable by the audit user (root-only: become: sudo)`);
      live.folders.get(path.slice(0, path.lastIndexOf("/")))?.add(path);
    }
  }
  if (!Number.isSafeInteger(live.cap))
    throw new ProbeParseError("certificates", "no cap line in the section");
  return live;
}
