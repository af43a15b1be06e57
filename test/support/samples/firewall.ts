import assert from "node:assert/strict";
import { PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { firewall } from "../../../src/domains/firewall/index.js";

/** `nft -j list ruleset` of these objects: a table, a base chain, rules, a set. */
export const nftJson = (objects: readonly object[]): string =>
  JSON.stringify({ nftables: [{ metainfo: { json_schema_version: 1 } }, ...objects] });

export const table = (name: string, family = "inet") => ({ table: { family, name } });
export const chain = (tableName: string, name: string, family = "inet") => ({
  chain: { family, table: tableName, name, type: "filter", hook: "input", prio: 0, policy: "drop" },
});
/** `tcp dport PORT accept`, with a comment when given. */
export const portRule = (tableName: string, chainName: string, port: number, comment?: string) => ({
  rule: {
    family: "inet",
    table: tableName,
    chain: chainName,
    ...(comment !== undefined && { comment }),
    expr: [
      { match: { op: "==", left: { payload: { protocol: "tcp", field: "dport" } }, right: port } },
      { accept: null },
    ],
  },
});

export const sample: DomainSample<typeof firewall> = {
  reads: [
    "/etc/nftables.conf",
    "/etc/sysconfig/nftables.conf",
    "/etc/systemd/system/sysinit.target.wants",
    "/etc/systemd/system/basic.target.wants",
    "/etc/systemd/system/multi-user.target.wants",
    "/etc/iptables",
    "/etc/sysconfig/iptables",
    "/etc/sysconfig/ip6tables",
    "/proc/net/ip_tables_names",
    "/proc/net/ip6_tables_names",
  ],
  declared: {
    "inet filter": {
      chains: {
        input: {
          hook: "type filter hook input priority 0",
          policy: "drop",
          rules: ["tcp dport 22 accept"],
        },
        constructor: { rules: ["accept"] },
      },
      sets: { ["__proto__"]: ["10.0.0.1"] },
    },
  },
  fuzzLines: (mark) => [
    mark("live"),
    nftJson([table("filter"), chain("filter", "input"), portRule("filter", "input", 22, "ssh")]),
    mark("boot"),
    "/etc/nftables.conf",
    nftJson([table("filter"), portRule("filter", "input", 22)]),
    mark("boot-none nftables.service is not enabled: the next boot loads no rules"),
    '{"nftables": [{"rule": {"family": "inet", "table": "filter", "chain": "input", "expr": [[[[',
    mark("legacy ip"),
    "*filter",
    ":INPUT DROP [0:0]",
    "-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT",
    "COMMIT",
    mark("legacy-boot"),
    " netfilter-persistent.service",
    "/etc/iptables/rules.v4:*filter",
    "/etc/iptables/rules.v4:-A INPUT -j ACCEPT",
  ],
  bench: {
    declared: {
      "inet filter": { chains: { input: { policy: "drop", rules: ["tcp dport 22 accept"] } } },
    },
    // Every rule distinct, in one chain: quadratic if each rule scans the declared ones.
    output: (n, { mark }) =>
      `${mark("live")}\n${nftJson([
        table("filter"),
        chain("filter", "input"),
        ...Array.from({ length: n }, (_, i) => portRule("filter", "input", i, `r${i}`)),
      ])}\n${mark("boot-none nftables.service is not enabled: the next boot loads no rules")}\n`,
  },
  hostile: {
    section: (nonce) =>
      [
        `${nonce} mark live`,
        nftJson([
          table("__proto__"),
          ...PROTOTYPE_NAMES.map((name) => chain("__proto__", name)),
          {
            set: {
              family: "inet",
              table: "__proto__",
              name: "constructor",
              type: "ifname",
              elem: ["toString"],
            },
          },
        ]),
        `${nonce} mark boot-none nftables.service is not enabled: the next boot loads no rules`,
        "",
      ].join("\n"),
    declared: { "inet __proto__": { chains: { ["__proto__"]: { policy: "drop" } } } },
    drift: (items) =>
      assert.deepEqual(
        items.filter((d) => d.declared !== d.live).map((d) => d.key),
        [
          ...PROTOTYPE_NAMES.filter((n) => n !== "__proto__").map((n) => `inet __proto__ ${n}`),
          "inet __proto__ @constructor",
          'inet __proto__ @constructor: "toString"',
        ],
      ),
  },
  // Listing a host's ruleset needs root (become: sudo), which the fleet test's nodes do not have:
  // test/e2e/firewall.test.ts audits real hosts' rulesets.
  fleet: null,
};
