// The boot's mount units: where systemd reads them and what each is named.

/**
 * The name of the mount unit for a mount point, as systemd-escape --path makes it: systemd refuses a
 * mount unit whose name is not its Where='s (systemd.mount(5)).
 */
export function mountUnitName(path: string): string {
  const trimmed = path.replace(/^\/+|\/+$/g, "").replace(/\/+/g, "/");
  if (trimmed === "") return "-.mount";
  const escaped = [...Buffer.from(trimmed, "utf8")]
    .map((byte, i) => {
      const c = String.fromCharCode(byte);
      if (c === "/") return "-";
      return /[A-Za-z0-9:_]/.test(c) || (c === "." && i > 0)
        ? c
        : `\\x${byte.toString(16).padStart(2, "0")}`;
    })
    .join("");
  return `${escaped}.mount`;
}

/** Where systemd reads unit files that outlive a reboot, first wins (systemd.unit(5)). */
export const UNIT_DIRS = [
  "/etc/systemd/system",
  "/usr/local/lib/systemd/system",
  "/usr/lib/systemd/system",
  "/lib/systemd/system",
];
