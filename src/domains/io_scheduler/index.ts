import * as z from "zod";
import { pathIn, within, type Domain, type Finding } from "../domain.js";
import { globMatch, globProblem, isGlob } from "../../glob.js";
import { parseSchedulers, type IoSchedulerLive } from "./parse.js";

const Scheduler = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/, "a scheduler name, like mq-deadline, bfq or none");
// Keys are checked here rather than by a key schema, whose failures zod reports as "Invalid key in
// record".
export const IoSchedulerDeclared = z.record(z.string(), Scheduler).superRefine((declared, ctx) => {
  for (const pattern of Object.keys(declared)) {
    const problem = /^[^\s/]+$/.test(pattern)
      ? globProblem(pattern)
      : "a block device name or glob, like vda or nvme*";
    if (problem) ctx.addIssue({ code: "custom", path: [pattern], message: problem });
  }
});
export type IoSchedulerDeclared = z.infer<typeof IoSchedulerDeclared>;

export const ioScheduler: Domain<IoSchedulerDeclared, IoSchedulerLive, "io_scheduler"> = {
  name: "io_scheduler",
  specPath: ["storage", "io_scheduler"],
  schema: IoSchedulerDeclared,
  severity: "low",
  onDrift: "accept",
  remediation:
    "Echo the declared scheduler into /sys/block/<dev>/queue/scheduler and persist it with a udev rule, or accept the live scheduler.",
  probe(_declared, ctx) {
    // The glob expands in the shell, whose own `read` takes each device's one line: no process is
    // started (`IFS=` keeps the line as the kernel wrote it, as `grep -H ''` did). Every device is
    // sent (a line each): declared keys are globs matched on the auditor (src/glob.ts), which no
    // sh, busybox or not, matches alike in every case, and a glob's own finding needs the devices.
    return [
      "set -- /sys/block/*/queue/scheduler",
      `if [ -e "$1" ]; then for f; do l=; { IFS= read -r l < "$f"; } 2>/dev/null; [ -z "$l" ] || printf '%s:%s\\n' "$f" "$l"; done; else ${ctx.unknown("no block device with an I/O scheduler in /sys/block")}; fi`,
    ].join("\n");
  },
  parse(output) {
    return parseSchedulers(output);
  },
  compare(declared, live) {
    const patterns = Object.keys(declared);
    const globs = patterns.filter(isGlob);
    const matched = new Set<string>();
    const findings: Finding[] = [];
    for (const device of [...live.keys()].sort()) {
      for (const glob of globs) if (globMatch(glob, device)) matched.add(glob);
      // A device's own name wins over a glob; among globs, the first declared one.
      // Device names come from the host: only the declaration's own keys count, never
      // Object.prototype's.
      const pattern = Object.hasOwn(declared, device)
        ? device
        : globs.find((glob) => globMatch(glob, device));
      if (pattern === undefined) continue;
      matched.add(pattern);
      const want = declared[pattern]!;
      const { active, available } = live.get(device)!;
      if (want === active) continue;
      const finding: Finding = {
        key: device,
        declared: want,
        live: active,
        path: pathIn(this, pattern),
      };
      if (!available.includes(want))
        finding.detail = `${want} is not available on ${device} (available: ${available.join(", ")})`;
      findings.push(finding);
    }
    for (const pattern of patterns.filter((p) => !matched.has(p))) {
      findings.push({
        key: pattern,
        declared: declared[pattern]!,
        live: null,
        path: pathIn(this, pattern),
        detail: isGlob(pattern)
          ? `no block device with an I/O scheduler matches ${pattern}`
          : `no block device ${pattern} with an I/O scheduler`,
      });
    }
    return findings;
  },
  accept(declared, finding) {
    const pattern = String(within(this, finding.path)[0]);
    // A pattern matching no device goes; a device that a glob covers gets its own entry, which wins
    // over the glob. Built by entries, never by assignment: a device named __proto__ must become a
    // key, not a prototype.
    const entries = Object.entries(declared).filter(
      ([p]) => finding.live !== null || p !== pattern,
    );
    if (finding.live !== null) entries.push([finding.key, String(finding.live)]);
    return Object.fromEntries(new Map(entries));
  },
  snapshot(live) {
    // Loop, RAM and network block devices come and go with mounts; a single option is no choice.
    const chosen = [...live.entries()]
      .filter(
        ([device, { available }]) => !/^(loop|ram|nbd)\d+$/.test(device) && available.length >= 2,
      )
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return chosen.length
      ? Object.fromEntries(chosen.map(([device, { active }]) => [device, active]))
      : undefined;
  },
};
