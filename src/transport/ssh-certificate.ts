// Short-lived SSH certificates, told apart on the client side. A host refuses an expired, not yet
// valid or wrongly named certificate with only "Permission denied (publickey)" (its reason goes to
// its own log), so when a node refuses us and ssh offered a certificate file, the file itself
// (`ssh-keygen -L`) says why. Each file is read once per run, and each reason told once per run.
import os from "node:os";
import path from "node:path";
import { runProcess } from "./launcher.js";

/** What `ssh-keygen -L` says of a certificate: the parts a refusal depends on. */
export interface CertificateFacts {
  keyId: string;
  /** Seconds since the epoch (UTC); absent: no bound on that side (`forever`, `after`, `before`). */
  validAfter?: number;
  validBefore?: number;
  /** Empty when the certificate lists none. */
  principals: string[];
}

/** `2026-12-07T02:07:44` as ssh-keygen prints it with TZ=UTC, in seconds. */
const utcSeconds = (text: string) => Date.parse(`${text}Z`) / 1000;
const TIME = "(\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d)";
const VALIDITY: ReadonlyArray<[RegExp, (m: RegExpExecArray) => Partial<CertificateFacts>]> = [
  [
    new RegExp(`^from ${TIME} to ${TIME}$`),
    (m) => ({ validAfter: utcSeconds(m[1]!), validBefore: utcSeconds(m[2]!) }),
  ],
  [new RegExp(`^after ${TIME}$`), (m) => ({ validAfter: utcSeconds(m[1]!) })],
  [new RegExp(`^before ${TIME}$`), (m) => ({ validBefore: utcSeconds(m[1]!) })],
  [/^forever$/, () => ({})],
];

/**
 * Parses `ssh-keygen -L -f FILE` output printed with TZ=UTC; undefined when it is not a
 * certificate's listing (a plain public key, a file it could not read).
 */
export function parseCertificateListing(text: string): CertificateFacts | undefined {
  const lines = text.split("\n").map((line) => line.trim());
  const field = (name: string) => {
    const index = lines.findIndex((line) => line.startsWith(`${name}:`));
    return index < 0 ? undefined : { index, value: lines[index]!.slice(name.length + 1).trim() };
  };
  const validity = field("Valid");
  const keyId = field("Key ID");
  const principals = field("Principals");
  if (!validity || !keyId || !principals) return undefined;
  const bounds = VALIDITY.map(([pattern, read]) => {
    const m = pattern.exec(validity.value);
    return m && read(m);
  }).find((b) => b);
  if (!bounds) return undefined;
  const names: string[] = [];
  // The principals follow on lines of their own, up to the next `Name:` field.
  if (principals.value === "")
    for (const line of lines.slice(principals.index + 1)) {
      if (/^[A-Z][A-Za-z ]*:/.test(line) || line === "") break;
      names.push(line);
    }
  return { keyId: keyId.value.replace(/^"(.*)"$/, "$1"), principals: names, ...bounds };
}

const stamp = (seconds: number) => `${new Date(seconds * 1000).toISOString().slice(0, 19)}Z`;

/** The validity as ssh-keygen words it, in UTC. */
function validityWords(facts: CertificateFacts): string {
  const { validAfter: after, validBefore: before } = facts;
  if (after !== undefined && before !== undefined)
    return `valid from ${stamp(after)} to ${stamp(before)}`;
  if (after !== undefined) return `valid after ${stamp(after)}`;
  if (before !== undefined) return `valid before ${stamp(before)}`;
  return "valid forever";
}

/**
 * Why a host refuses this certificate for `user` at `now` (seconds), in sshd's words, when the
 * file itself says: expired, not yet valid, or not naming the user; undefined when it does not.
 */
export function certificateProblem(
  facts: CertificateFacts,
  now: number,
  user: string | undefined,
): string | undefined {
  if (facts.validBefore !== undefined && now >= facts.validBefore) return "certificate expired";
  if (facts.validAfter !== undefined && now < facts.validAfter) return "certificate not yet valid";
  if (user !== undefined && facts.principals.length > 0 && !facts.principals.includes(user))
    return `certificate does not name ${JSON.stringify(user)} among its principals (${facts.principals.join(", ")})`;
  return undefined;
}

/** The settings of `ssh -G` a certificate check needs: the user, certificate and identity files. */
export function certificateSettings(resolved: string): { user?: string; files: string[] } {
  let user: string | undefined;
  const certificates: string[] = [];
  const identities: string[] = [];
  for (const line of resolved.split("\n")) {
    const [keyword, ...rest] = line.split(" ");
    const value = rest.join(" ").trim();
    if (keyword === "user") user = value;
    else if (keyword === "certificatefile") certificates.push(value);
    // ssh also loads `<identity>-cert.pub` beside each identity file.
    else if (keyword === "identityfile") identities.push(`${value}-cert.pub`);
  }
  return { ...(user !== undefined && { user }), files: [...certificates, ...identities] };
}

/** `~` and the `%` tokens of a file path ssh expands, or undefined for a token not known here. */
export function expandSshPath(
  file: string,
  tokens: { user: string | undefined; host: string },
): string | undefined {
  const home = os.homedir();
  let failed = false;
  const expanded = file.replace(/^~(?=\/|$)/, home).replace(/%(.)/g, (_, token: string) => {
    const value = {
      "%": "%",
      d: home,
      u: os.userInfo().username,
      r: tokens.user,
      h: tokens.host,
      n: tokens.host,
    }[token];
    if (value === undefined) failed = true;
    return value ?? "";
  });
  return failed ? undefined : path.resolve(expanded);
}

export interface CertificateRefusal {
  /** The certificate file, and its words: `certificate expired: FILE (key ID "x", valid from …)`. */
  message: string;
  /** Whether the reason is the file's own (expiry, principals), the same for every node using it. */
  ofTheFile: boolean;
}

// What ssh -G and ssh-keygen -L print is read whole, up to a mebibyte.
const LIMITS = { timeoutMs: 10_000, maxOutputBytes: 1 << 20 };

/**
 * Explains refusals by the certificates ssh offered, reading each file once per run (`ssh -G` for
 * which files and user, once per node refused); `onFileProblem` hears each file's own problem once.
 */
export class CertificateCheck {
  private readonly listings = new Map<string, Promise<CertificateFacts | undefined>>();
  private readonly told = new Set<string>();
  constructor(
    private readonly onFileProblem: (message: string) => void,
    private readonly now: () => number = () => Date.now() / 1000,
    private readonly sshBinary = "ssh",
  ) {}

  private listing(file: string): Promise<CertificateFacts | undefined> {
    let listing = this.listings.get(file);
    if (!listing) {
      listing = runProcess("ssh-keygen", ["-L", "-f", file], "", LIMITS).then((run) =>
        run.exitCode === 0 && !run.stopped ? parseCertificateListing(run.stdout) : undefined,
      );
      this.listings.set(file, listing);
    }
    return listing;
  }

  /**
   * Why the host `host` refused the connection ssh made with `args` (its `-G` form lists what it
   * offered), when a certificate was among it; undefined when none was.
   */
  async explain(host: string, args: readonly string[]): Promise<CertificateRefusal | undefined> {
    const resolved = await runProcess(this.sshBinary, ["-G", ...args], "", LIMITS);
    if (resolved.exitCode !== 0 || resolved.stopped) return undefined;
    const { user, files } = certificateSettings(resolved.stdout);
    for (const file of files) {
      const expanded = expandSshPath(file, { user, host });
      const facts = expanded && (await this.listing(expanded));
      if (!facts || !expanded) continue;
      const problem = certificateProblem(facts, this.now(), user);
      const about = `${expanded} (key ID ${JSON.stringify(facts.keyId)}, ${validityWords(facts)})`;
      if (!problem)
        return {
          message: `certificate refused by ${host}: ${about}, principals ${facts.principals.join(", ") || "(none)"}`,
          ofTheFile: false,
        };
      const message = `${problem}: ${about}`;
      if (!this.told.has(message)) {
        this.told.add(message);
        this.onFileProblem(message);
      }
      return { message, ofTheFile: true };
    }
    return undefined;
  }
}
