import type { Cause } from "./cause.js";
import {
  causeTime,
  latest,
  type AptTransaction,
  type HostRecord,
  type PackageEvent,
} from "./host-record.js";

// A package transaction as a cause: what `packages` says of a package a transaction changed, and
// `files` and `certificates` of a declared file a package shipped.

/** One event in a reviewer's words: `nginx 1.24 → 1.26`, `curl 8.5 installed`, `vim 9.0 removed`. */
export const packageChange = (e: PackageEvent) =>
  e.to === undefined
    ? `${e.name} ${e.from ?? ""} removed`.replace("  ", " ")
    : e.action === "installed"
      ? `${e.name} ${e.to} installed`
      : `${e.name} ${e.from ?? "(new)"} → ${e.to}`;

/** The apt transaction a dpkg event ran in: apt logs whole seconds, as dpkg does. */
function transactionOf(at: number, record: HostRecord): AptTransaction | undefined {
  return latest(record.apt, (t) => t.start <= at && at <= (t.end ?? t.start));
}

/** Who ran the transaction in progress at `at`, as `by` says it. */
export const transactionBy = (at: number, record: HostRecord) => byOf(transactionOf(at, record));

/** Who ran it, in an operator's words: `unattended-upgrades`, `apt-get (alice)`, `dpkg`. */
function byOf(transaction: AptTransaction | undefined): string {
  if (!transaction?.commandline) return "dpkg";
  const program = transaction.commandline.split(" ", 1)[0]!.replace(/^.*\//, "");
  const name = program === "unattended-upgrade" ? "unattended-upgrades" : program;
  const user = transaction.requestedBy?.replace(/ \(\d+\)$/, "");
  return user ? `${name} (${user})` : name;
}

/**
 * The package run a change at `at` (epoch milliseconds) happened in, in a cause's words: a dpkg
 * configure step (its maintainer script ran then), else an apt run. Needs `steps` in the request.
 */
export function packageRunAt(
  at: number,
  record: HostRecord,
): { by: string; during: string; group: string } | undefined {
  const step = latest(record.steps ?? [], (s) => s.start <= at && at <= (s.end ?? s.start));
  if (step)
    return {
      by: transactionBy(step.start, record),
      during: `while dpkg configured ${step.name} ${step.version} (its maintainer script)`,
      group: `package: ${step.name} ${step.version} configured`,
    };
  const apt = latest(record.apt, (t) => t.start <= at && at <= (t.end ?? t.start));
  if (!apt?.commandline) return undefined;
  return {
    by: transactionBy(apt.start, record),
    during: `while \`${apt.commandline}\` ran`,
    group: `package: ${apt.commandline}`,
  };
}

/**
 * The cause of one package event: its transaction's changes (the events sent: those of declared
 * packages and of owners of declared files) are its group, the same on every node it ran on. rpm
 * records the transaction but not who ran it (rpm, dnf or yum): no `by`.
 */
export function transactionCause(
  event: PackageEvent,
  record: HostRecord,
  kind: "package" | "package-file",
  evidence: string,
): Cause {
  const rpm = event.transaction;
  const transaction = rpm === undefined ? transactionOf(event.at, record) : undefined;
  const within =
    rpm !== undefined
      ? record.packages.filter((e) => e.transaction === rpm)
      : transaction
        ? record.packages.filter(
            (e) => e.at >= transaction.start && e.at <= (transaction.end ?? e.at),
          )
        : record.packages.filter((e) => e.at === event.at);
  // The event itself too: one of a package no domain declared is not among the events sent.
  const changes = [...new Set([event, ...within].map(packageChange))].sort();
  return {
    kind,
    at: causeTime(event.at),
    ...(rpm === undefined && { by: byOf(transaction) }),
    evidence,
    group: `package: ${changes.join(", ")}`,
  };
}

/**
 * A declared file whose live contents are what its package shipped: the latest transaction that
 * installed the package (`cause` undefined when none is recorded). Undefined when the file is not as
 * a package shipped it.
 */
export function shippedFile(
  path: string,
  record: HostRecord,
): { cause: Cause | undefined } | undefined {
  const owned = record.owned.get(path);
  if (owned?.digest === undefined || record.digest.get(path) !== owned.digest) return undefined;
  const event = latest(record.packages, (e) => e.name === owned.package && e.to !== undefined);
  return {
    cause:
      event &&
      transactionCause(
        event,
        record,
        "package-file",
        `${path} replaced by ${packageChange(event)}`,
      ),
  };
}

/** The same file through the other side of a merged /usr (`/lib` is a link to `/usr/lib`). */
const otherSide = (file: string) =>
  file.startsWith("/usr/lib/") ? file.slice(4) : file.startsWith("/lib/") ? `/usr${file}` : file;

/**
 * The package configured since the last audit whose dpkg file list names `file`, under either side
 * of a merged /usr (dpkg lists `/lib/…` where a process maps `/usr/lib/…`): asked with
 * `shippedSince` or `shippedMatching`.
 */
export const shippedPackage = (file: string, record: HostRecord): string | undefined =>
  record.shippedBy?.get(file) ?? record.shippedBy?.get(otherSide(file));
