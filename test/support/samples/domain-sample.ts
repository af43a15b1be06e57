// What the tests that run every domain at once need from each domain: test/support/samples/<name>.ts
// exports `sample`, typed `DomainSample<typeof theDomain>`. Samples are test material, kept with the
// tests: only tests and benchmarks import them (through test/support/samples.ts), never the CLI.
import type { HostDefinition } from "../hosts.js";
import type { Domain } from "../../../src/domains/domain.js";

/** The declaration type of a domain object. */
export type DeclaredOf<D> =
  D extends Domain<infer Declared, infer _Live, string> ? Declared : never;

/** One drift item of a report, as the prototype-name and fleet tests compare them. */
export interface SampleDrift {
  key: string;
  declared: unknown;
  live: unknown;
}

/** Helpers for writing a benchmark's section. */
export interface BenchText {
  /** A marker line (without its newline). */
  mark(label: string): string;
  /** `n` lines, each `line(i)` and a newline. */
  lines(n: number, line: (i: number) => string): string;
}

export interface DomainSample<D> {
  /**
   * Every host path (a file, or a directory and all under it) the domain's probe reads, the
   * declared sample's files included: `runProbe` (test/unit/domains/live-probe.ts) redirects them
   * to a test's tree, and test/unit/probe/own-tree.test.ts fails when a section reads a path this
   * leaves out.
   */
  reads: readonly string[];
  /**
   * A valid declaration, with a prototype name (`constructor`, `toString`) wherever the manifest
   * may hold one: test/unit/domains/fuzz.test.ts compares everything `parse` returns against it.
   */
  declared: DeclaredOf<D>;
  /**
   * Probe output lines no fixture under test/fixtures/<name>/ covers, mixed and mutated by the fuzz
   * test; `mark(label)` is a marker line.
   */
  fuzzLines?: (mark: (label: string) => string) => string[];
  /** bench/parse-linearity.ts: the output shape that costs the parser most per entry. */
  bench: {
    declared: DeclaredOf<D>;
    /** The section at `n` entries. */
    output(n: number, text: BenchText): string;
  };
  /** test/unit/audit/prototype-names.test.ts: a host naming things after Object.prototype's members. */
  hostile: {
    /**
     * The section, with PROTOTYPE_NAMES (test/support/probe-output.ts) wherever the host names
     * something.
     */
    section(nonce: string): string;
    declared: DeclaredOf<D>;
    /** Asserts the drift found (every item of this domain, in report order). */
    drift(items: SampleDrift[]): void;
  };
  /**
   * test/e2e/fleet.test.ts: a real ssh test host `<name>-01` with one injected drift, or null where
   * a fleet host cannot hold the state (systemd needs its own test, io_scheduler shares the
   * machine's block devices). The fleet's declaration is a clean host's snapshot.
   */
  fleet: {
    /** The test host's state (test/support/hosts.ts), name aside. */
    host: Omit<HostDefinition, "name">;
    /** The node's own declaration, when the snapshot's is not the one to drift from. */
    declared?: DeclaredOf<D>;
    /** Asserts the drift found; `gateway` is the fleet's bridge address. */
    drift(items: SampleDrift[], fleet: { gateway: string }): void | Promise<void>;
  } | null;
}
