import assert from "node:assert/strict";
import { marked, PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { files } from "../../../src/domains/files/index.js";

const HASH = "a".repeat(64);
const HOTFIXED = "/etc/qm-e2e/hotfixed.conf";
const lines = (list: string[]) => `${list.join("\n")}\n`;

export const sample: DomainSample<typeof files> = {
  reads: ["/etc"],
  declared: [
    { path: "/etc/a", contents: "x\n", mode: "0644", owner: "root" },
    { path: "/etc/constructor", sha256: HASH },
    { path: "/etc/l", link: "/etc/a" },
    { path: "/etc/gone", absent: true },
  ],
  fuzzLines: (mark) => [
    ...["cap 1024", "paths", "stat", "sha256"].map(mark),
    ...["contents", "unreadable", "missing", "link"].flatMap((kind) =>
      ["/etc/a", "/etc/constructor", "/etc/l"].map((p) => mark(`${kind} ${p}`)),
    ),
    "/etc/a",
    "/etc/l",
    "/etc/constructor",
    "12\t644\troot\t0\troot\t0\tregular file\t/etc/a",
    "12\t777\troot\t0\troot\t0\tsymbolic link\t/etc/l",
    "5\t644\troot\t0\troot\t0\tregular file\t/etc/constructor",
    "5\t755\troot\t0\troot\t0\tdirectory\t/etc/gone",
    `${HASH}  /etc/constructor`,
    "stat: cannot statx '/etc/gone': No such file or directory",
  ],
  bench: {
    declared: [
      { path: "/etc/a", contents: "x\n" },
      { path: "/etc/b", sha256: HASH },
    ],
    output: (n, { mark, lines }) =>
      `${mark("cap 1024")}\n${mark("paths")}\n/etc/a\n/etc/b\n${mark("stat")}\n` +
      lines(n, (i) => `stat: cannot statx '/etc/x${i}': No such file or directory`) +
      `${mark("sha256")}\n${lines(n, (i) => `sha256sum: /etc/x${i}: Permission denied`)}`,
  },
  hostile: {
    section: (nonce) =>
      marked(nonce, [
        ["cap 1024", ""],
        ["paths", lines(PROTOTYPE_NAMES.map((n) => `/etc/${n}`))],
        [
          "stat",
          lines(
            PROTOTYPE_NAMES.slice(1).map(
              (n) => `2\t644\troot\t0\troot\t0\tregular file\t/etc/${n}`,
            ),
          ),
        ],
        [
          `missing /etc/${PROTOTYPE_NAMES[0]}`,
          `stat: cannot statx '/etc/${PROTOTYPE_NAMES[0]}': No such file or directory\n`,
        ],
        ...PROTOTYPE_NAMES.slice(1).map((n): [string, string] => [`contents /etc/${n}`, "x\n"]),
      ]),
    declared: PROTOTYPE_NAMES.map((n) => ({
      path: `/etc/${n}`,
      contents: "x\n",
    })),
    drift: (items) =>
      assert.deepEqual(
        items.map((d) => [d.key, d.declared, d.live]),
        [["/etc/__proto__", "present", null]],
      ),
  },
  fleet: {
    host: { files: { [HOTFIXED]: { contents: "role = hotfixed\n", mode: "0664" } } },
    declared: [{ path: HOTFIXED, contents: "role = app\n", mode: "0644" }],
    drift: (items) =>
      assert.deepEqual(items, [
        { key: HOTFIXED, declared: "role = app\n", live: "role = hotfixed\n" },
        { key: `${HOTFIXED}:mode`, declared: "0644", live: "0664" },
      ]),
  },
};
