import * as z from "zod";
import { ManifestEditError } from "../../errors.js";
import {
  compareTime,
  keyedList,
  pathIn,
  within,
  type CompareTime,
  type Domain,
  type Finding,
} from "../domain.js";
import { linkedValue } from "../no-follow.js";
import { certificateCause } from "./cause.js";
import { parseCertificates, type CertificatesLive, type FileLive, type PathLive } from "./parse.js";
import { certificatesProbe } from "./probe.js";

const DAY_MS = 86_400_000;
const VALID_FOR = /^(\d{1,5})d$/;

/** An absolute path with no empty, `.` or `..` component and no newline: the kernel's own name. */
const CertificatePath = z
  .string()
  .regex(/^(\/[^/\n]+)+$/, "an absolute path without a trailing slash, like /etc/ssl/certs/web.pem")
  .refine(
    (path) => !path.split("/").some((part) => part === "." || part === ".."),
    "no . or .. in the path: declare it as the kernel names it",
  );

export const CertificateDeclared = z.strictObject({
  /** A PEM file, or a folder whose `*.pem`, `*.crt` and `*.cer` files are each checked. */
  path: CertificatePath,
  /** The least validity each certificate must have left: whole days, `30d`. */
  valid_for: z.string().regex(VALID_FOR, "whole days of validity left, like valid_for: 30d"),
  /** The (first) certificate's subject, as `CN=web.example.net, O=Acme`. */
  subject: z.string().min(1).optional(),
  /** The (first) certificate's issuer, written as the subject is. */
  issuer: z.string().min(1).optional(),
  /** Names its subject alternative names must include (DNS names, addresses), exactly. */
  names: z.array(z.string().min(1)).min(1).optional(),
});
export type CertificateDeclared = z.infer<typeof CertificateDeclared>;

export const CertificatesDeclared = keyedList(CertificateDeclared, "path");
export type CertificatesDeclared = z.infer<typeof CertificatesDeclared>;

const daysOf = (validFor: string) => Number(VALID_FOR.exec(validFor)?.[1] ?? 0);
const isoDay = (ms: number) => new Date(ms).toISOString().replace(/\.000Z$/, "Z");
const EXPIRES = /^expires on (\S+)$/;
const NOT_BEFORE = /^not valid before (\S+)$/;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/**
 * Whether a certificate's names cover a declared one: the same name, or (RFC 6125, 6.4.3) a
 * wildcard `*.example.com` standing for one whole left-most label, `a.example.com` but neither
 * `a.b.example.com` nor `example.com`. DNS names compare without case.
 */
export function carriesName(names: readonly string[], declared: string): boolean {
  const want = declared.toLowerCase();
  const dot = want.indexOf(".");
  return names.some((name) => {
    const got = name.toLowerCase();
    if (got === want) return true;
    // A wildcard over a top-level name alone (`*.com`) stands for nothing.
    return (
      got.startsWith("*.") && got.indexOf(".", 2) > 0 && dot > 0 && want.slice(dot) === got.slice(1)
    );
  });
}

/** The checks of one file against its declaration (its own, or its folder's). */
function fileFindings(
  declared: CertificateDeclared,
  file: string,
  got: FileLive,
  when: CompareTime,
): Finding[] {
  const at = (field: string) => pathIn(certificates, declared.path, field);
  if ("refused" in got) {
    const detail = {
      "private key":
        "holds a private key: refused, none of its bytes read or sent; declare only public certificates",
      "not a certificate": "no PEM certificate could be read in it",
      "over the cap": "larger than audit.max_file_bytes (or more certificates than read): not read",
    }[got.refused];
    return [{ key: file, declared: "certificate", live: got.refused, path: at("path"), detail }];
  }
  const findings: Finding[] = [];
  const first = got.certificates[0]!;
  const notAfter = Math.min(...got.certificates.map((c) => c.notAfter));
  const notBefore = Math.max(...got.certificates.map((c) => c.notBefore));
  const need = daysOf(declared.valid_for) * DAY_MS;
  const days = Math.floor((notAfter - when.now) / DAY_MS);
  const expires = `expires on ${isoDay(notAfter)}`;
  if (notBefore > when.now)
    // A client refuses it as it refuses an expired one: no validity is left to count.
    findings.push({
      key: file,
      declared: declared.valid_for,
      live: `not valid before ${isoDay(notBefore)}`,
      path: at("valid_for"),
      detail: `not valid yet: valid from ${isoDay(notBefore)}, in ${plural(Math.ceil((notBefore - when.now) / DAY_MS), "day")}, until ${isoDay(notAfter)}`,
    });
  else if (notAfter - when.now < need)
    findings.push({
      key: file,
      declared: declared.valid_for,
      live: expires,
      path: at("valid_for"),
      detail:
        notAfter <= when.now
          ? `expired ${plural(-days, "day")} ago, on ${isoDay(notAfter)}`
          : `${plural(days, "day")} left, until ${isoDay(notAfter)}: under the ${declared.valid_for} declared`,
    });
  else if (notAfter - when.nextAudit < need)
    findings.push({
      key: file,
      declared: declared.valid_for,
      live: declared.valid_for,
      path: at("valid_for"),
      latent: {
        after: "expiry",
        becomes: expires,
        because: `expires in ${plural(days, "day")}, on ${isoDay(notAfter)}: under the ${declared.valid_for} declared before the next audit (${isoDay(when.nextAudit)})`,
      },
    });
  for (const field of ["subject", "issuer"] as const) {
    const want = declared[field];
    if (want !== undefined && want !== first[field])
      findings.push({
        key: `${file}:${field}`,
        declared: want,
        live: first[field],
        path: at(field),
      });
  }
  const missing = declared.names?.filter((name) => !carriesName(first.names, name)) ?? [];
  if (missing.length)
    findings.push({
      key: `${file}:names`,
      declared: declared.names!,
      live: first.names,
      path: at("names"),
      detail: `not among its names: ${missing.join(", ")}`,
    });
  return findings;
}

/** What stands at a declared path that is no file or folder. */
function pathFinding(declared: CertificateDeclared, other: PathLive): Finding {
  const path = pathIn(certificates, declared.path, "path");
  if (other === null)
    return { key: declared.path, declared: "certificate", live: null, path, detail: "missing" };
  if (other === "other")
    return {
      key: declared.path,
      declared: "certificate",
      live: "other",
      path,
      detail: "neither a file nor a folder (a device, a fifo or a socket): not read",
    };
  return {
    key: declared.path,
    declared: "certificate",
    live: linkedValue(other),
    path,
    detail: `${other.component} is a symlink: not followed, nothing behind it read (declare the path without links)`,
  };
}

/** The files a declaration stands for: itself, or the certificate files of its folder. */
const filesOf = (declared: CertificateDeclared, live: CertificatesLive): Iterable<string> =>
  live.folders.get(declared.path) ?? [declared.path];

/**
 * The declaration with a lower `valid_for`: the whole days the certificate had left when audited,
 * as the report says.
 */
function acceptValidity(
  item: CertificateDeclared,
  finding: Finding,
  auditedAt: number,
): CertificateDeclared {
  if (NOT_BEFORE.test(String(finding.live)))
    throw new ManifestEditError(
      `${finding.key} is not valid yet (${String(finding.live)}): replace it, or set the host's clock right; it cannot be accepted`,
    );
  const notAfter = Date.parse(EXPIRES.exec(String(finding.live))?.[1] ?? "");
  const days = Math.floor((notAfter - auditedAt) / DAY_MS);
  if (!(days >= 0))
    throw new ManifestEditError(
      `${finding.key} has expired (${String(finding.live)}): renew it; an expired certificate cannot be accepted`,
    );
  return { ...item, valid_for: `${Math.min(days, daysOf(item.valid_for))}d` };
}

export const certificates: Domain<CertificatesDeclared, CertificatesLive, "certificates"> = {
  name: "certificates",
  specPath: ["certificates"],
  schema: CertificatesDeclared,
  listKey: "path",
  snapshotsDeclared: true,
  severity: "high",
  onDrift: "ticket",
  keyPrefixes: ["/"],
  remediation:
    "Renew or replace the certificate (keeping its subject, issuer and names), or accept what the host holds into the manifest.",
  driftSentence: ({ declared, live }, key, hosts) =>
    typeof live === "string" && EXPIRES.test(live)
      ? `${key} ${live.replace(EXPIRES, "expires on `$1`")} on ${hosts}: less validity left than the \`${String(declared)}\` declared.`
      : typeof live === "string" && NOT_BEFORE.test(live)
        ? `${key} is ${live.replace(NOT_BEFORE, "not valid before `$1`")} on ${hosts}: not valid yet, so no validity is left of the \`${String(declared)}\` declared.`
        : `${key} is declared \`${JSON.stringify(declared)}\` but ${hosts} ${hosts === "the host" ? "holds" : "hold"} \`${JSON.stringify(live)}\`.`,
  latentWords: {
    sentence: ({ key, latent }, q) =>
      latent.after === "expiry"
        ? `${q(key)} ${latent.because.replace(/^(expires in [^,]+), on (\S+): /, (_, soon: string, date: string) => `${soon} (${q(date)}): `)}`
        : undefined,
    remediation: {
      expiry:
        "Renew the certificate before the next audit finds it under its declared validity, or lower `valid_for` in the manifest.",
    },
  },
  probe(declared, ctx) {
    return certificatesProbe(declared?.map((d) => d.path) ?? [], ctx);
  },
  parse(output, ctx) {
    return parseCertificates(ctx.parts(output));
  },
  compare(declared, live, when) {
    const time = compareTime(when);
    const findings: Finding[] = [];
    for (const item of declared) {
      const other = live.other.get(item.path);
      if (other !== undefined) {
        findings.push(pathFinding(item, other));
        continue;
      }
      for (const file of filesOf(item, live)) {
        const got = live.files.get(file);
        // Unreadable: listed as unknown by the parser.
        if (got) findings.push(...fileFindings(item, file, got, time));
      }
      const more = live.more.get(item.path);
      if (more)
        findings.push({
          key: item.path,
          declared: "certificate",
          live: `${more} more files`,
          path: pathIn(certificates, item.path, "path"),
          detail: `${more} certificate files past the ${live.folders.get(item.path)?.size ?? 0} read: not checked`,
        });
    }
    return findings;
  },
  watchTargets(declared) {
    const paths = declared.map((d) => d.path);
    // A declared path is a file or a folder of them: its entry, and every entry in it. Time ages a
    // certificate with no file event: polled too, for its days left.
    return { paths, directories: paths, polled: true };
  },
  records(declared) {
    return { files: declared.map((d) => d.path) };
  },
  cause: certificateCause,
  snapshot() {
    // Nothing declared, nothing read: certificates are adopted from declared paths only.
    return undefined;
  },
  snapshotKeeps(accepted, live) {
    // A folder's certificates, each declared on its own with what it holds now.
    return accepted.flatMap((item) => {
      const files = live.folders.get(item.path);
      if (!files) return [item];
      return [...files].flatMap((file): CertificateDeclared[] => {
        const got = live.files.get(file);
        if (!got || "refused" in got) return [];
        const first = got.certificates[0]!;
        return [
          {
            path: file,
            valid_for: item.valid_for,
            subject: first.subject,
            issuer: first.issuer,
            ...(first.names.length && { names: first.names }),
          },
        ];
      });
    });
  },
  accept(declared, finding, auditedAt) {
    const [path, field] = within(certificates, finding.path) as [string, string];
    return declared.flatMap((item): CertificateDeclared[] => {
      if (item.path !== path) return [item];
      if (field === "valid_for") return [acceptValidity(item, finding, auditedAt ?? Date.now())];
      if (field === "subject" || field === "issuer")
        return [{ ...item, [field]: String(finding.live) }];
      if (field === "names" && Array.isArray(finding.live)) {
        const { names: _, ...rest } = item;
        return [finding.live.length ? { ...rest, names: finding.live.map(String) } : rest];
      }
      // Nothing at the path: nothing is declared there.
      if (field === "path" && finding.live === null) return [];
      throw new ManifestEditError(
        `${finding.key} holds ${JSON.stringify(finding.live)} where a certificate is declared: replace it on the host`,
      );
    });
  },
};
