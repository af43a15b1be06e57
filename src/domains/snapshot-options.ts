// What a snapshot (`snapshot`, `adopt`) may choose about the declaration it writes: the choices a
// domain reads in its own `snapshot`, named here so the CLI can offer them without knowing which
// domain takes which.

/**
 * How installed packages are declared: those installed on purpose (`chosen`), or every one (`all`,
 * also called `names`), at any version; every one at its live version; or none.
 */
export const PACKAGES_MODES = ["chosen", "all", "names", "versions", "none"] as const;
export type PackagesMode = (typeof PACKAGES_MODES)[number];

export interface SnapshotOptions {
  packages: PackagesMode;
  /** Packages declared at their live version whatever `packages` says (`adopt --pin`). */
  pinned?: ReadonlySet<string>;
  /**
   * Listeners bound only to loopback inside the host's ephemeral port range are allowed by one
   * range rule per protocol (`tcp/32768-60999@loopback`), not declared one by one: a short-lived
   * one is then no drift.
   */
  ephemeralAsRange: boolean;
}

export const DEFAULT_SNAPSHOT_OPTIONS: SnapshotOptions = {
  packages: "names",
  ephemeralAsRange: true,
};
