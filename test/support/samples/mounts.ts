import assert from "node:assert/strict";
import { marked, PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { mounts } from "../../../src/domains/mounts/index.js";

const lines = (list: string[]) => `${list.join("\n")}\n`;
/** A mountinfo line of a tmpfs at `point` (escaped as the kernel writes it). */
const tmpfsLine = (id: number, point: string, options = "rw,nosuid,nodev,relatime") =>
  `${id} 1 0:${id} / ${point} ${options} shared:${id} - tmpfs tmpfs rw,size=65536k`;

export const sample: DomainSample<typeof mounts> = {
  reads: [
    "/proc/self/mountinfo",
    "/etc/fstab",
    "/etc/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
    "/dev",
  ],
  declared: [
    { path: "/srv/data", source: "tmpfs", fstype: "tmpfs", options: ["nosuid", "nodev"] },
    { path: "/constructor", fstype: "ext4" },
  ],
  fuzzLines: (mark) => [
    ...["mountinfo", "fstab", "units", "dropins"].map(mark),
    tmpfsLine(30, "/srv/data"),
    tmpfsLine(31, "/srv/my\\040data", "ro,noexec"),
    "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard",
    "6:tmpfs /srv/data tmpfs nosuid,nodev 0 0",
    "7:UUID=2f4c /boot ext2 defaults 0 2",
    "/etc/systemd/system/srv-cache.mount:",
    "/etc/systemd/system/srv-cache.mount:Where=/srv/cache",
    "/etc/systemd/system/srv-cache.mount:Options=noexec",
    "/etc/systemd/system/srv-data.mount.d/10-options.conf:",
    "/etc/systemd/system/srv-data.mount.d/10-options.conf:[Mount]",
    "/etc/systemd/system/srv-data.mount.d/10-options.conf:Options=ro,nosuid",
  ],
  bench: {
    declared: [{ path: "/srv/data", fstype: "tmpfs", options: ["nosuid"] }],
    // Every mount point escaped: each field is unescaped.
    output: (n, { mark, lines }) =>
      `${mark("mountinfo")}\n${lines(n, (i) => tmpfsLine(i, `/srv/a\\040b\\011${i}`))}` +
      `${mark("fstab")}\n${lines(n, (i) => `${i}:tmpfs /srv/a\\040b\\011${i} tmpfs nosuid 0 0`)}`,
  },
  hostile: {
    section: (nonce) =>
      marked(nonce, [
        ["mountinfo", lines(PROTOTYPE_NAMES.map((n, i) => tmpfsLine(40 + i, `/${n}`)))],
        ["fstab", lines(PROTOTYPE_NAMES.map((n, i) => `${i + 1}:${n} /${n} ${n} ${n} 0 0`))],
      ]),
    declared: PROTOTYPE_NAMES.map((n) => ({ path: `/${n}`, fstype: "tmpfs" })),
    drift: (items) =>
      assert.deepEqual(
        items.map((d) => [d.key, d.declared, d.live]),
        PROTOTYPE_NAMES.map((n) => [`/${n}:fstype`, "tmpfs", "tmpfs"]),
      ),
  },
  // A mount is made on a running host: test/e2e/mounts.test.ts mounts by hand and audits.
  fleet: null,
};
