// Every failure Quartermaster reports is one of these classes, so the CLI can turn it into
// a `location: message` line and an exit code in one place (src/cli/exit.ts).

export interface SourceLocation {
  file: string;
  line?: number;
  col?: number;
}

export function formatLocation(loc: SourceLocation): string {
  return [loc.file, loc.line, loc.line !== undefined ? (loc.col ?? 1) : undefined]
    .filter((part) => part !== undefined)
    .join(":");
}

/** A problem in the manifest tree: always names the file, and the line and column when known. */
export class ManifestError extends Error {
  override readonly name = "ManifestError";
  constructor(
    message: string,
    readonly location: SourceLocation,
    readonly hint?: string,
  ) {
    super(message);
  }
  override toString(): string {
    return `${formatLocation(this.location)}: ${this.message}${this.hint ? ` (${this.hint})` : ""}`;
  }
}

/** Several manifest problems found in one pass; validation reports them all, not just the first. */
export class ManifestErrors extends Error {
  override readonly name = "ManifestErrors";
  constructor(readonly errors: ManifestError[]) {
    super(errors.map((e) => e.toString()).join("\n"));
  }
}

/** Wrong command line: unknown flag, bad value, missing argument. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  constructor(
    message: string,
    /** The command whose usage the mistake was made in, when known: its usage is shown. */
    readonly command?: string,
  ) {
    super(message);
  }
}

/** Why a node could not be audited. `status` is the node status the report shows. */
export type NodeFailureKind =
  | "unreachable"
  | "timeout"
  | "auth"
  | "host-key"
  | "sudo"
  | "truncated"
  | "malformed"
  | "too-large"
  | "probe";

/**
 * What ssh's own words say stopped a connection (the report's `errorClass`): only
 * `bastion-throttled` and `connection-lost` are worth another try.
 */
export const SSH_FAILURE_CLASSES = [
  "refused-by-target",
  "name-resolution",
  "network-unreachable",
  "auth",
  // A refusal of the certificate ssh offered: expired, not yet valid, or its principals refused.
  "certificate",
  "host-key",
  "bastion-throttled",
  "connection-lost",
  "timeout",
  "ssh",
] as const;
export type SshFailureClass = (typeof SSH_FAILURE_CLASSES)[number];

export class NodeAuditError extends Error {
  override readonly name = "NodeAuditError";
  /** Connection attempts made before giving up, when the transport retries (ssh). */
  tries?: number;
  constructor(
    readonly node: string,
    readonly kind: NodeFailureKind,
    message: string,
    options?: { cause?: unknown; sshClass?: SshFailureClass },
  ) {
    super(message, options);
    this.sshClass = options?.sshClass;
  }
  /** Set when ssh could not connect or was killed: the class of its failure. */
  readonly sshClass: SshFailureClass | undefined;
  get status(): "unreachable" | "error" {
    return this.kind === "unreachable" || this.kind === "timeout" ? "unreachable" : "error";
  }
}

/** Probe output that does not parse: the host answered something Quartermaster cannot trust. */
export class ProbeParseError extends Error {
  override readonly name = "ProbeParseError";
  constructor(
    readonly section: string,
    message: string,
  ) {
    super(`${section}: ${message}`);
  }
}

/**
 * Probe output that stops before its end: the end-of-probe marker, or a section's end, never came
 * (the connection dropped, or the host's output was cut). `section` is "probe" for the whole
 * output.
 */
export class ProbeTruncatedError extends ProbeParseError {}

/** A failure talking to the forge (GitHub API or git remote), translated at the edge. */
export class ForgeError extends Error {
  override readonly name = "ForgeError";
  /** The HTTP status the forge answered, when it answered one. */
  readonly status?: number;
  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    if (options.status !== undefined) this.status = options.status;
  }
}

/**
 * A manifest edit (an accept or resolve PR's change) that cannot be made safely: the file is left
 * to a human.
 */
export class ManifestEditError extends Error {
  override readonly name = "ManifestEditError";
  constructor(
    message: string,
    /** The spec path of the change that could not be written, when the edit is about one. */
    readonly path?: readonly (string | number)[],
  ) {
    super(message);
  }
}

/** A file named on the command line (a report to render, merge or propose from) that cannot be used. */
export class InputFileError extends Error {
  override readonly name = "InputFileError";
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(message);
  }
}

/** What one run left for the next (a file on the state branch) that cannot be read at all. */
export class StateError extends Error {
  override readonly name = "StateError";
  constructor(
    /** `branch:file`. */
    readonly file: string,
    message: string,
  ) {
    super(message);
  }
}

/** Shard reports that do not make up one whole fleet audit. */
export class ReportMergeError extends Error {
  override readonly name = "ReportMergeError";
}

/** An inventory `adopt` cannot read: every problem found, each at its line. */
export class InventoryErrors extends Error {
  override readonly name = "InventoryErrors";
  constructor(
    readonly file: string,
    readonly errors: readonly { line: number; message: string; file?: string }[],
  ) {
    // A hostile inventory can hold a problem a line: the first ones tell what to fix.
    const shown = errors.slice(0, 20).map((e) => `${e.file ?? file}:${e.line}: ${e.message}`);
    if (errors.length > shown.length) shown.push(`… and ${errors.length - shown.length} more`);
    super(shown.join("\n"));
  }
}
