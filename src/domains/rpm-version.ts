// How rpm's versions read, for `packages` and for the rpm records the cause section reads.

/** rpm's `%{EPOCH}` and `%{VERSION}-%{RELEASE}` as a live version: no epoch when unset or 0. */
export const rpmVersion = (epoch: string, versionRelease: string): string =>
  epoch === "(none)" || epoch === "0" ? versionRelease : `${epoch}:${versionRelease}`;
