// What a snapshot (`snapshot`, `adopt`) may choose about the declaration it writes: the choices a
// domain reads in its own `snapshot`, named here so the CLI can offer them without knowing which
// domain takes which.

/** How installed packages are declared: any version, the live version, or not at all. */
export const PACKAGES_MODES = ["names", "versions", "none"] as const;
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
