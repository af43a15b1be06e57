import { ProbeParseError } from "../../errors.js";

export interface KernelModulesLive {
  /** Modules in /proc/modules, named as the kernel names them. */
  loaded: Set<string>;
  /**
   * Modules compiled into the running kernel (modules.builtin): always present, never unloadable.
   */
  builtin: Set<string>;
}

/** The kernel treats `-` and `_` in module names alike and prints `_`. */
export function moduleName(name: string): string {
  return name.replaceAll("-", "_");
}

/**
 * `grep -H ''` over /proc/modules and the running kernel's modules.builtin:
 * `/proc/modules:br_netfilter 32768 0 - Live 0x0000000000000000` and
 * `/lib/modules/6.1.0-28-amd64/modules.builtin:kernel/drivers/block/loop.ko`.
 */
export function parseModules(text: string): KernelModulesLive {
  const live: KernelModulesLive = { loaded: new Set(), builtin: new Set() };
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    if (line.startsWith("/proc/modules:")) {
      const m = /^([A-Za-z0-9_-]+) \d+ (?:\d+|-) /.exec(line.slice("/proc/modules:".length));
      if (!m)
        throw new ProbeParseError(
          "kernel_modules",
          `unexpected /proc/modules line "${line.slice(0, 80)}"`,
        );
      live.loaded.add(moduleName(m[1]!));
      continue;
    }
    const m =
      /^\/lib\/modules\/[^/]+\/modules\.builtin:(?:.*\/)?([A-Za-z0-9_-]+)\.ko(?:\.[a-z]+)?$/.exec(
        line,
      );
    if (!m) throw new ProbeParseError("kernel_modules", `unexpected line "${line.slice(0, 80)}"`);
    live.builtin.add(moduleName(m[1]!));
  }
  return live;
}
