// Names a host controls (devices, interfaces, packages, modules, units, drop-ins, files, sysctls)
// that are also the names of Object.prototype's members: every domain must treat them as plain
// names.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { stringify } from "yaml";
import { auditFleet } from "../../../src/audit/fleet.js";
import { defaultAuditSettings } from "../../../src/audit/node.js";
import { snapshotSpec } from "../../../src/cli/commands/snapshot.js";
import { DOMAINS } from "../../../src/domains/registry.js";
import { loadFleet } from "../../../src/manifest/load.js";
import { Report } from "../../../src/report/schema.js";
import {
  framed,
  marked,
  NOT_IN_MAINTENANCE,
  scriptedTransport,
} from "../../support/probe-output.js";
import { removeTree, writeTree } from "../../support/tree.js";

const NAMES = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"];
const ROUTE_HEADER =
  "/proc/net/route:Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT";

/** Every domain's section, with prototype names wherever the host names something. */
function hostileOutput(nonce: string): string {
  const lines = (list: string[]) => `${list.join("\n")}\n`;
  return framed(nonce, [
    ["maintenance", NOT_IN_MAINTENANCE(nonce)],
    [
      "kernel",
      marked(nonce, [
        ["running", "6.1.0-28-amd64\n"],
        ["installed", lines(["6.1.0-28-amd64", ...NAMES.filter((n) => /^[a-z]/.test(n))])],
      ]),
    ],
    [
      "sysctl",
      marked(nonce, [
        [
          "runtime",
          lines(["/proc/sys/net/ipv4/ip_forward:0", ...NAMES.map((n) => `/proc/sys/${n}:1`)]),
        ],
        ["persisted", lines(NAMES.map((n) => `/etc/sysctl.d/${n}.conf:${n} = 1`))],
      ]),
    ],
    [
      "io_scheduler",
      lines(["vda", ...NAMES].map((d) => `/sys/block/${d}/queue/scheduler:none [mq-deadline] bfq`)),
    ],
    [
      "routes",
      lines([
        ROUTE_HEADER,
        "/proc/net/route:eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0",
        ...NAMES.map(
          (dev, i) =>
            `/proc/net/route:${dev}\t00${(i + 1).toString(16).padStart(2, "0")}A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0`,
        ),
      ]),
    ],
    [
      "packages",
      marked(nonce, [
        [
          "dpkg",
          lines(
            NAMES.flatMap((n) => [
              `Package: ${n}`,
              "Status: install ok installed",
              "Version: 2.0",
              "Architecture: amd64",
            ]),
          ),
        ],
      ]),
    ],
    ["ports", lines(["/proc/net/tcp:  sl  local_address rem_address   st tx_queue rx_queue"])],
    [
      "files",
      marked(nonce, [
        ["cap 1024", ""],
        ["paths", lines(NAMES.map((n) => `/etc/${n}`))],
        [
          "stat",
          lines(NAMES.slice(1).map((n) => `2\t644\troot\t0\troot\t0\tregular file\t/etc/${n}`)),
        ],
        [
          "missing /etc/__proto__",
          "stat: cannot statx '/etc/__proto__': No such file or directory\n",
        ],
        ...NAMES.slice(1).map((n): [string, string] => [`contents /etc/${n}`, "x\n"]),
      ]),
    ],
    [
      "systemd",
      marked(nonce, [
        ["cap 1024", ""],
        ...NAMES.flatMap((n): [string, string][] => [
          [`unit ${n}.service`, `file /etc/systemd/system/${n}.service\n`],
          [`dropin ${n}.service`, `${n}.conf\n[Service]\n`],
        ]),
      ]),
    ],
    [
      "kernel_modules",
      lines(NAMES.map((n) => `/proc/modules:${n} 16384 0 - Live 0x0000000000000000`)),
    ],
  ]);
}

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

describe("prototype names from a host", () => {
  it("are audited as plain names, and the report validates against its own schema", async () => {
    const spec = {
      system: {
        kernel_version: "6.1.0-28-amd64",
        sysctl_parameters: { "net.ipv4.ip_forward": 0 },
        kernel_modules: { absent: ["constructor"] },
      },
      storage: { io_scheduler: { vda: "mq-deadline", "*": "none" } },
      networking: {
        routes: [{ dst: "default", via: "10.0.0.1", dev: "eth0" }],
        listening_ports: [],
      },
      packages: { installed_manifest: { toString: "1.0", valueOf: "*" } },
      files: NAMES.map((n) => ({ path: `/etc/${n}`, contents: "x\n" })),
      systemd: {
        units: NAMES.map((n) => ({
          name: `${n}.service`,
          dropins: { "toString.conf": "[Service]\n" },
        })),
      },
    };
    const dir = await writeTree({ "nodes/hostile.yaml": stringify(spec) });
    dirs.push(dir);
    const fleet = await loadFleet(dir);
    const report = await auditFleet({
      nodes: fleet.nodes,
      transportFor: () => scriptedTransport(hostileOutput),
      settings: defaultAuditSettings({ maxFileBytes: 1024 }),
      drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
      concurrency: 1,
      manifestRevision: null,
    });
    const node = report.nodes[0]!;
    assert.equal(node.status, "drift", node.error);
    assert.equal(node.unknown, undefined);
    const parsed = Report.safeParse(JSON.parse(JSON.stringify(report)));
    assert.ok(parsed.success, JSON.stringify(parsed.error?.issues.slice(0, 3)));

    const keys = (domain: string) =>
      node.drift.filter((d) => d.domain === domain).map((d) => [d.key, d.declared, d.live]);
    assert.deepEqual(
      keys("io_scheduler"),
      [...NAMES].sort().map((n) => [n, "none", "mq-deadline"]),
    );
    assert.deepEqual(
      keys("routes").map(([key]) => key),
      NAMES.map((n, i) => `192.168.${i + 1}.0/24 dev ${n}`),
    );
    assert.deepEqual(keys("packages"), [["toString", "1.0", "2.0"]]);
    assert.deepEqual(keys("kernel_modules"), [["constructor", "absent", "loaded"]]);
    assert.deepEqual(keys("files"), [["/etc/__proto__", "present", null]]);
    const systemd = keys("systemd");
    // Each unit lacks its declared toString.conf (except toString's own unit, whose live drop-in
    // has that name) and has one undeclared.
    assert.equal(systemd.length, 2 * NAMES.length - 2);
    assert.ok(
      systemd.some(
        ([key, declared]) => key === "__proto__.service.d/__proto__.conf" && declared === null,
      ),
    );
    assert.equal(keys("sysctl").length, 0);
    assert.equal(keys("kernel").length, 0);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it("become keys of a snapshot, never its prototype", async () => {
    const { spec } = await snapshotSpec(scriptedTransport(hostileOutput), DOMAINS);
    const system = spec.system as { sysctl_parameters: Record<string, unknown> };
    assert.deepEqual(Object.keys(system.sysctl_parameters).sort(), [...NAMES].sort());
    const io = (spec.storage as { io_scheduler: Record<string, unknown> }).io_scheduler;
    assert.deepEqual(Object.keys(io).sort(), ["vda", ...NAMES].sort());
    assert.equal(Object.getPrototypeOf(io), Object.prototype);
    const packages = (spec.packages as { installed_manifest: Record<string, unknown> })
      .installed_manifest;
    assert.equal(Object.hasOwn(packages, "__proto__"), true);
    assert.match(stringify(spec), /__proto__: mq-deadline/);
  });
});
