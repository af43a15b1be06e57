import { z } from "zod";
import { partsByLabel, type Domain, type Finding } from "../domain.js";
import { compareVersions, parseInstalled, parseRunning, type KernelLive } from "./parse.js";

export const KernelDeclared = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._+~-]*$/, "not a kernel release (like 6.1.0-28-amd64)");
export type KernelDeclared = z.infer<typeof KernelDeclared>;

export const kernel: Domain<KernelDeclared, KernelLive, "kernel"> = {
  name: "kernel",
  specPath: ["system", "kernel_version"],
  schema: KernelDeclared,
  severity: "high",
  onDrift: "ticket",
  keyPrefixes: ["kernel_version"],
  remediation: "Schedule a reboot into the declared kernel, or update the manifest.",
  probe(_declared, ctx) {
    // No process at all: reads, globs and tests are shell builtins. osrelease is a string file,
    // which answers dash's byte-by-byte `read` correctly (integer /proc/sys files do not). A
    // modules directory without an image is what a removed kernel leaves behind (DKMS builds),
    // so only images count.
    return [
      ctx.mark("running"),
      "read -r r < /proc/sys/kernel/osrelease && printf '%s\\n' \"$r\"",
      ctx.mark("installed"),
      `for f in /boot/vmlinuz-*; do [ -e "$f" ] && printf '%s\\n' "\${f#/boot/vmlinuz-}"; done`,
      `for d in /lib/modules/*; do [ -e "$d/vmlinuz" ] && printf '%s\\n' "\${d##*/}"; done`,
      "true",
    ].join("\n");
  },
  parse(output, ctx) {
    const parts = partsByLabel("kernel", ctx.parts(output));
    return {
      running: parseRunning(parts.get("running") ?? ""),
      installed: parseInstalled(parts.get("installed") ?? ""),
    };
  },
  compare(declared, live) {
    if (declared === live.running) return [];
    const finding: Finding = {
      key: "kernel_version",
      declared,
      live: live.running,
      path: this.specPath,
    };
    const notes: string[] = [];
    const newest = live.installed.at(-1);
    if (newest !== undefined && compareVersions(newest, live.running) > 0)
      notes.push(`reboot pending: ${newest} installed`);
    if (live.installed.length > 0 && !live.installed.includes(declared))
      notes.push(`${declared} is not installed`);
    if (notes.length) finding.detail = notes.join("; ");
    return [finding];
  },
  snapshot(live) {
    return live.running;
  },
};
