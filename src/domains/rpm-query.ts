// How the probe asks rpm, for `packages` and for the rpm records the cause section reads.

// rpm opens its database read-only for a query, yet SQLite writes the write-ahead log's index of a
// WAL database (rpmdb.sqlite-shm) whenever the process may write that file: as root, every query
// changed the host. As a user who may not (65534, nobody's on most distributions; rpm's database is
// readable by anyone), SQLite maps the index read-only, as it does for the audit user. setpriv execs
// rpm in its own process: no process more. A host without setpriv runs rpm as is.
export const RPM_QUERY_SETUP =
  "qm_rpm=rpm; if { [ -w /var/lib/rpm/rpmdb.sqlite-shm ] || [ -w /usr/lib/sysimage/rpm/rpmdb.sqlite-shm ]; } && command -v setpriv >/dev/null 2>&1; then qm_rpm='setpriv --reuid=65534 --regid=65534 --clear-groups rpm'; fi";

/** The rpm command, after RPM_QUERY_SETUP: a variable, not a function, so a pipeline forks no shell more. */
export const RPM_QUERY = "$qm_rpm";
