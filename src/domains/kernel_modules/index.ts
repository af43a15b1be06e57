import * as z from "zod";
import { pathIn, type Domain, type Finding, type ProbeContext } from "../domain.js";
import type { Latent } from "../cause.js";
import { BOOT_DIRS, moduleName, parseModules, type KernelModulesLive } from "./parse.js";

const ModuleName = z.string().regex(/^[A-Za-z0-9_-]+$/, "a kernel module name, like br_netfilter");
export const KernelModulesDeclared = z
  .strictObject({ loaded: z.array(ModuleName).optional(), absent: z.array(ModuleName).optional() })
  .superRefine((declared, ctx) => {
    const loaded = new Set((declared.loaded ?? []).map(moduleName));
    (declared.absent ?? []).forEach((name, i) => {
      if (loaded.has(moduleName(name)))
        ctx.addIssue({
          code: "custom",
          path: ["absent", i],
          message: `${name} is declared both loaded and absent`,
        });
    });
  });
export type KernelModulesDeclared = z.infer<typeof KernelModulesDeclared>;

/**
 * grep's patterns for the lines the parser may read a declared module from (a superset: the
 * parser decides): `NAME SIZE ...` in /proc/modules, `.../NAME.ko[.xz]` in modules.builtin,
 * `-` and `_` alike. Nothing declared (a snapshot), every line.
 */
function moduleLines(names: readonly string[] | undefined, ctx: ProbeContext): string {
  if (!names) return "''";
  const any = `(${names.map((name) => name.replaceAll(/[-_]/g, "[-_]")).join("|")})`;
  return `-E -e ${ctx.quote(`^${any} `)} -e ${ctx.quote(`(^|/)${any}\\.ko(\\.[a-z]+)?$`)}`;
}

/**
 * grep's pattern for the modules-load.d and modprobe.d lines that may name a declared module
 * (every non-comment line for a snapshot): a bare name, or one after `blacklist`/`install`.
 */
function bootLines(names: readonly string[] | undefined, ctx: ProbeContext): string {
  if (!names) return ctx.quote("^[[:space:]]*[^[:space:]#;]");
  const any = `(${names.map((name) => name.replaceAll(/[-_]/g, "[-_]")).join("|")})`;
  return ctx.quote(`^[[:space:]]*((blacklist|install)[[:space:]]+)?${any}([[:space:]]|$)`);
}

/**
 * A loop printing `/sys/module/NAME/drivers:` for each declared (for a snapshot, each loaded)
 * module that registers a driver, with shell builtins only: udev loads those again at boot.
 */
function driverLines(names: readonly string[] | undefined, ctx: ProbeContext): string {
  const each = names
    ? `for m in ${names.map((name) => ctx.quote(moduleName(name))).join(" ")}`
    : "while read -r m _";
  const from = names ? "" : " < /proc/modules";
  return `${each}; do [ -e "/sys/module/$m/drivers" ] && printf '%s:\\n' "/sys/module/$m/drivers"; done${from}`;
}

/**
 * What the next boot does to a module that is as declared now: one a modules-load.d file loads and
 * modprobe.d does not block comes back; a loaded one modprobe.d blocks does not, nor does one
 * loaded by hand: no modules-load.d file loads it, and nothing needs it (held by no module,
 * device, mount or socket, and no driver of its own that udev would load it for again).
 */
function bootLatent(live: KernelModulesLive, key: string, declared: "loaded" | "absent") {
  const loads = live.loadsAtBoot.get(key);
  const blocked = live.blocked.get(key);
  if (declared === "absent" && loads !== undefined && blocked === undefined)
    return { after: "reboot", becomes: "loaded", because: loads } satisfies Latent;
  if (declared === "absent" || live.builtin.has(key)) return undefined;
  if (blocked !== undefined)
    return { after: "reboot", becomes: "absent", because: blocked } satisfies Latent;
  if (loads === undefined && live.idle.has(key) && !live.drivers.has(key))
    return {
      after: "reboot",
      becomes: "absent",
      because: "no modules-load.d file loads it",
    } satisfies Latent;
  return undefined;
}

export const kernelModules: Domain<KernelModulesDeclared, KernelModulesLive, "kernel_modules"> = {
  name: "kernel_modules",
  specPath: ["system", "kernel_modules"],
  schema: KernelModulesDeclared,
  severity: "high",
  onDrift: "accept",
  itemsAreASet: true,
  remediation:
    "Load or blacklist the module and persist it in /etc/modules-load.d or /etc/modprobe.d, or accept the live state.",
  probe(declared, ctx) {
    // osrelease is a string file, which answers dash's byte-by-byte `read` correctly (integer
    // /proc/sys files do not); one grep then reads the module list and the built-in list,
    // keeping only the declared modules' lines (a snapshot takes every loaded one).
    const names = declared && [...(declared.loaded ?? []), ...(declared.absent ?? [])];
    if (names?.length === 0) return "true";
    return [
      `if [ ! -e /proc/modules ]; then ${ctx.unknown("no /proc/modules: kernel without loadable module support")}`,
      `elif [ ! -r /proc/modules ]; then ${ctx.unknown("/proc/modules is not readable")}`,
      `else read -r r < /proc/sys/kernel/osrelease; grep -H -s ${moduleLines(names, ctx)} /proc/modules "/lib/modules/$r/modules.builtin"`,
      driverLines(names, ctx),
      // Every boot file is named (it masks a same-named one later), then its lines naming a
      // declared module, numbered (the latent's `because`). With no file, grep would read stdin.
      "set --",
      `for f in ${BOOT_DIRS.flatMap((d) => [`${d}/modules-load.d/*.conf`, `${d}/modprobe.d/*.conf`]).join(" ")}; do [ -e "$f" ] && printf '%s:\\n' "$f" && set -- "$@" "$f"; done`,
      `[ $# -eq 0 ] || grep -H -n -s -E ${bootLines(names, ctx)} "$@"; fi`,
      "true",
    ].join("\n");
  },
  parse(output) {
    return parseModules(output);
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    (declared.loaded ?? []).forEach((name, i) => {
      const key = moduleName(name);
      if (live.loaded.has(key) || live.builtin.has(key)) {
        const latent = bootLatent(live, key, "loaded");
        const path = pathIn(this, "loaded", i);
        if (latent) findings.push({ key, declared: "loaded", live: "loaded", path, latent });
        return;
      }
      findings.push({
        key,
        declared: "loaded",
        live: "absent",
        path: pathIn(this, "loaded", i),
      });
    });
    (declared.absent ?? []).forEach((name, i) => {
      const key = moduleName(name);
      if (!live.loaded.has(key) && !live.builtin.has(key)) {
        const latent = bootLatent(live, key, "absent");
        const path = pathIn(this, "absent", i);
        if (latent) findings.push({ key, declared: "absent", live: "absent", path, latent });
        return;
      }
      const finding: Finding = {
        key,
        declared: "absent",
        live: "loaded",
        path: pathIn(this, "absent", i),
      };
      if (!live.loaded.has(key))
        finding.detail = "built into the running kernel: it cannot be unloaded";
      findings.push(finding);
    });
    return findings;
  },
  accept(declared, finding) {
    // The module moves to the list that says what the host runs: loaded, or absent.
    const from = finding.live === "loaded" ? "absent" : "loaded";
    const to = finding.live === "loaded" ? "loaded" : "absent";
    const next: KernelModulesDeclared = {
      ...declared,
      [from]: (declared[from] ?? []).filter((name) => moduleName(name) !== finding.key),
    };
    if (!next[from]!.length) delete next[from];
    if (!(next[to] ?? []).some((name) => moduleName(name) === finding.key))
      next[to] = [...(next[to] ?? []), finding.key];
    return next;
  },
  snapshot(live) {
    // Built-in modules are left out: they come with the kernel release, declared elsewhere.
    return live.loaded.size ? { loaded: [...live.loaded].sort() } : undefined;
  },
};
