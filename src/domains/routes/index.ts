import { isDeepStrictEqual } from "node:util";
import * as z from "zod";
import { pathIn, type Domain, type Finding } from "../domain.js";
import { canonicalIPv6, isIP } from "../procnet.js";
import {
  canonicalDst,
  defaultMetric,
  parseRoutes,
  type LiveRoute,
  type RoutesLive,
} from "./parse.js";

const DeclaredRoute = z
  .strictObject({
    dst: z.string(),
    via: z
      .string()
      .refine((v) => isIP(v) !== 0, "via must be an IP address, like 10.0.0.1")
      .optional(),
    dev: z
      .string()
      .regex(/^[^\s/:]{1,15}$/, "dev must be an interface name, like eth0")
      .optional(),
    metric: z.number().int().min(0).max(0xffffffff).optional(),
  })
  .superRefine((route, ctx) => {
    try {
      const { family } = canonicalDst(route.dst);
      if (family && route.via && isIP(route.via) !== family)
        ctx.addIssue({
          code: "custom",
          path: ["via"],
          message: `via ${route.via} is not in the address family of ${route.dst}`,
        });
    } catch (error) {
      ctx.addIssue({ code: "custom", path: ["dst"], message: (error as Error).message });
    }
  });
export const RoutesDeclared = z.array(DeclaredRoute);
export type RoutesDeclared = z.infer<typeof RoutesDeclared>;
type DeclaredRoute = z.infer<typeof DeclaredRoute>;

/** A declared route in live form; `family` stays open for a gateway-less `default`. */
interface WantedRoute {
  family?: 4 | 6;
  dst: string;
  via?: string;
  dev?: string;
  metric?: number;
}

function wanted(route: DeclaredRoute): WantedRoute {
  const { family, dst } = canonicalDst(route.dst);
  const via = route.via && (isIP(route.via) === 6 ? canonicalIPv6(route.via) : route.via);
  return {
    family: family ?? (via ? (isIP(via) as 4 | 6) : undefined),
    dst,
    via,
    dev: route.dev,
    metric: route.metric,
  };
}

/** `default via 10.0.0.1 dev eth0`, `10.1.0.0/16 dev eth1 metric 100`: the words of `ip route`. */
export function routeKey(route: Omit<WantedRoute, "family">): string {
  return [
    route.dst,
    route.via && `via ${route.via}`,
    route.dev && `dev ${route.dev}`,
    route.metric !== undefined && `metric ${route.metric}`,
  ]
    .filter(Boolean)
    .join(" ");
}

/**
 * A live route as a manifest entry: the metric only when it is not the one `ip route add` picks.
 */
function declaredForm(route: LiveRoute): DeclaredRoute {
  const entry: DeclaredRoute = { dst: route.dst };
  if (route.via) entry.via = route.via;
  entry.dev = route.dev;
  if (route.metric !== defaultMetric(route.family)) entry.metric = route.metric;
  return entry;
}

function matches(want: WantedRoute, got: LiveRoute): boolean {
  return (
    want.dst === got.dst &&
    (want.family === undefined || want.family === got.family) &&
    want.via === got.via &&
    (want.dev === undefined || want.dev === got.dev) &&
    (want.metric === undefined || want.metric === got.metric)
  );
}

// The shared awk's function over the files named (`qm_v`), each read with getline.
const ROUTE_LINES = [
  "function routes_lines(  i, f, a, l) { for (i = 1; i <= qm_vn; i++) { f = qm_v[i]",
  "while ((getline < f) > 0) {",
  'if (f == "/proc/net/fib_trie") {',
  'if ($1 == "|--") a = $2; else if ($0 ~ /\\/32 host LOCAL/ && !(a in l)) { l[a] = 1; print "local:" a }',
  "continue }",
  'if (f == "/proc/net/ipv6_route" && NF == 10 && ($10 == "lo" || $9 ~ /^[89a-f]......./ ||',
  `$1 $2 == "${"fe80".padEnd(32, "0")}40" || $1 $2 == "${"ff".padEnd(32, "0")}08")) continue`,
  // An address's own prefix route only tells kernel-made routes apart: not needed for one on lo or
  // in fe80::/64, whose routes are left out anyway.
  'if (f == "/proc/net/if_inet6" && NF == 6 && ($6 == "lo" || $3 $1 ~ /^40fe80000000000000/)) continue',
  'sub(/[ \\t]+$/, ""); print f ":" $0 }',
  "close(f) } }",
].join("\n");

export const routes: Domain<RoutesDeclared, RoutesLive, "routes"> = {
  name: "routes",
  specPath: ["networking", "routes"],
  schema: RoutesDeclared,
  severity: "critical",
  onDrift: "ticket",
  itemsAreASet: true,
  remediation:
    "Audit the routing table; commit the permanent route to the network configuration, or remove the stray route.",
  awk: ROUTE_LINES,
  probe(_declared, ctx) {
    // The declared list is the whole main table, so every route the parser may keep is sent. One
    // awk reads every file (IPv6 ones may be absent) and leaves out, on the host, what the parser
    // leaves out anyway: of fib_trie, which is large on a router, all but each local address once;
    // of ipv6_route and if_inet6, routes and addresses on lo, local routes (flag 0x80000000),
    // fe80::/64 and ff00::/8 (one of each per interface); and the blanks padding /proc/net/route.
    return [
      "set -- /proc/net/route",
      'for f in /proc/net/ipv6_route /proc/net/if_inet6 /proc/net/fib_trie; do [ -e "$f" ] && set -- "$@" "$f"; done',
      ctx.awk("routes_lines", { values: ['"$@"'] }),
    ].join("\n");
  },
  parse(output) {
    return parseRoutes(output);
  },
  compare(declared, live) {
    // Live routes by destination: a declaration looks only at its own destination's routes, never
    // the whole table.
    const byDst = new Map<string, LiveRoute[]>();
    for (const got of live.routes) {
      const same = byDst.get(got.dst);
      if (same) same.push(got);
      else byDst.set(got.dst, [got]);
    }
    const taken = new Set<LiveRoute>();
    const missing: number[] = [];
    const wants = declared.map(wanted);
    // The most specific declarations pick their live route first, so a loose one cannot take it.
    const specificity = (w: WantedRoute) =>
      Number(w.dev !== undefined) + Number(w.metric !== undefined);
    const order = wants
      .map((_, i) => i)
      .sort((a, b) => specificity(wants[b]!) - specificity(wants[a]!));
    for (const i of order) {
      const got = byDst
        .get(wants[i]!.dst)
        ?.find((route) => !taken.has(route) && matches(wants[i]!, route));
      if (got) taken.add(got);
      else missing.push(i);
    }
    const findings: Finding[] = missing
      .sort((a, b) => a - b)
      .map((i) => {
        const want = wants[i]!;
        const finding: Finding = {
          key: routeKey(want),
          declared: declared[i]!,
          live: null,
          path: pathIn(this, i),
        };
        const sameFamily = (got: LiveRoute) =>
          want.family === undefined || want.family === got.family;
        const sameDst = (byDst.get(want.dst) ?? []).filter(sameFamily);
        if (sameDst.length)
          finding.detail = `live route to ${want.dst}: ${sameDst.map((got) => routeKey(declaredForm(got))).join("; ")}`;
        return finding;
      });
    for (const got of live.routes.filter((route) => !taken.has(route))) {
      const entry = declaredForm(got);
      findings.push({ key: routeKey(entry), declared: null, live: entry, path: this.specPath });
    }
    return findings;
  },
  accept(declared, finding) {
    // A missing route leaves the declared set; an extra one joins it, in the form `ip route` shows.
    if (finding.live === null) {
      const at = declared.findIndex((route) => isDeepStrictEqual(route, finding.declared));
      return at === -1 ? declared : declared.filter((_, i) => i !== at);
    }
    return [...declared, finding.live as DeclaredRoute];
  },
  snapshot(live) {
    return live.routes.map(declaredForm);
  },
};
