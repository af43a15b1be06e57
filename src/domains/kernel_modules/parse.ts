import { ProbeParseError } from "../../errors.js";

export interface KernelModulesLive {
  /** Modules in /proc/modules, named as the kernel names them. */
  loaded: Set<string>;
  /** Loaded modules nothing holds (reference count 0): no module, device, mount or socket. */
  idle: Set<string>;
  /** Modules that register a device driver (`/sys/module/NAME/drivers`): udev loads them again. */
  drivers: Set<string>;
  /**
   * Modules compiled into the running kernel (modules.builtin): always present, never unloadable.
   */
  builtin: Set<string>;
  /** Modules a modules-load.d file loads at boot: the first `file:line` naming each. */
  loadsAtBoot: Map<string, string>;
  /** Modules modprobe.d keeps from loading (`blacklist`, `install NAME /bin/false`): `file:line`. */
  blocked: Map<string, string>;
}

/** The directories systemd reads modules-load.d and modprobe.d files from, first wins per name. */
export const BOOT_DIRS = ["/etc", "/run", "/usr/local/lib", "/usr/lib", "/lib"];

// `FILE:` for each file there is, then `FILE:N:TEXT` for its lines that may name a module.
const BOOT_LINE =
  /^(\/etc|\/run|\/usr\/local\/lib|\/usr\/lib|\/lib)\/(modules-load|modprobe)\.d\/(.*?\.conf):(?:(\d+):(.*))?$/;
// modprobe.d: `blacklist NAME`, or an install command that runs only true or false.
const BLOCKING =
  /^\s*(?:blacklist\s+(\S+)\s*|install\s+(\S+)\s+(?:\/usr)?\/bin\/(?:false|true)\s*)$/;

/** Reads one boot-configuration line into `live`; false when the line is not one. */
function readBootLine(line: string, live: KernelModulesLive, owner: Map<string, string>): boolean {
  const m = BOOT_LINE.exec(line);
  if (!m) return false;
  const [, dir, kind, name, number, text] = m;
  // A file masks a same-named one in a later directory, as systemd reads them.
  const key = `${kind}/${name}`;
  if (!owner.has(key)) owner.set(key, dir!);
  if (owner.get(key) !== dir || number === undefined) return true;
  const where = `${dir}/${kind}.d/${name}:${number}`;
  if (kind === "modules-load") {
    const module = text!.trim();
    if (/^[A-Za-z0-9_-]+$/.test(module) && !live.loadsAtBoot.has(moduleName(module)))
      live.loadsAtBoot.set(moduleName(module), where);
    return true;
  }
  const blocked = BLOCKING.exec(text!);
  const module = blocked && (blocked[1] ?? blocked[2])!;
  if (module && !live.blocked.has(moduleName(module))) live.blocked.set(moduleName(module), where);
  return true;
}

/** The kernel treats `-` and `_` in module names alike and prints `_`. */
export function moduleName(name: string): string {
  return name.replaceAll("-", "_");
}

/**
 * `grep -H ''` over /proc/modules and the running kernel's modules.builtin:
 * `/proc/modules:br_netfilter 32768 0 - Live 0x0000000000000000` and
 * `/lib/modules/6.1.0-28-amd64/modules.builtin:kernel/drivers/block/loop.ko`, then
 * `/sys/module/snd_hda_intel/drivers:` for each of those modules that registers a driver.
 */
export function parseModules(text: string): KernelModulesLive {
  const live: KernelModulesLive = {
    loaded: new Set(),
    idle: new Set(),
    drivers: new Set(),
    builtin: new Set(),
    loadsAtBoot: new Map(),
    blocked: new Map(),
  };
  const owner = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (!line.trim() || readBootLine(line, live, owner)) continue;
    if (line.startsWith("/proc/modules:")) {
      const m = /^([A-Za-z0-9_-]+) \d+ (\d+|-) /.exec(line.slice("/proc/modules:".length));
      if (!m)
        throw new ProbeParseError(
          "kernel_modules",
          `unexpected /proc/modules line "${line.slice(0, 80)}"`,
        );
      live.loaded.add(moduleName(m[1]!));
      if (m[2] === "0") live.idle.add(moduleName(m[1]!));
      continue;
    }
    const driver = /^\/sys\/module\/([A-Za-z0-9_-]+)\/drivers:$/.exec(line);
    if (driver) {
      live.drivers.add(moduleName(driver[1]!));
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
