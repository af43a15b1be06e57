// The fleet benchmarks' spec: a test host's live state as snapshot takes it, with a few packages
// declared as a typical node does (the probe filters the package database to them on the host).
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { parse, stringify } from "yaml";
import { assembleProbe, auditedDomains } from "../src/audit/node.js";
import type { AnyDomain } from "../src/domains/registry.js";
import { declaredFor } from "../src/domains/domain.js";
import { loadFleet } from "../src/manifest/load.js";
import { fleetAuditSettings } from "../src/runs/audit.js";

/** Packages a typical node declares, those of them the test hosts have (and telnetd absent). */
const TYPICAL_PACKAGES = ["openssh-server", "bash", "coreutils", "sudo", "tzdata"];

/** `snapshot --node <first> --packages <packages>` over ssh: its YAML. */
export type Snapshot = (packages: "names" | "none") => Promise<string>;

/**
 * Writes `manifests`: fleet.yaml from the first host's snapshot with the typical packages, an
 * empty node file per name. Returns that fleet.yaml and the snapshot's default one (every
 * installed package declared: the heaviest spec).
 */
export async function writeTypicalManifests(
  manifests: string,
  names: readonly string[],
  snapshot: Snapshot,
): Promise<{ fleetYaml: string; everyPackageYaml: string }> {
  await mkdir(path.join(manifests, "nodes"), { recursive: true });
  await writeFile(path.join(manifests, "nodes", `${names[0]}.yaml`), "{}\n");
  const everyPackageYaml = await snapshot("names");
  const installed = Object.keys(
    (parse(everyPackageYaml) as { packages: { installed_manifest: Record<string, string> } })
      .packages.installed_manifest,
  );
  const few = TYPICAL_PACKAGES.filter((name) => installed.includes(name));
  const fleetYaml = `${await snapshot("none")}${stringify({
    packages: {
      installed_manifest: {
        ...Object.fromEntries(few.map((name) => [name, "*"])),
        telnetd: "absent",
      },
    },
  })}`;
  await writeFile(path.join(manifests, "fleet.yaml"), fleetYaml);
  for (const name of names) await writeFile(path.join(manifests, "nodes", `${name}.yaml`), "{}\n");
  return { fleetYaml, everyPackageYaml };
}

/**
 * The probe the real code sends to the first node of `manifests`, with the cause section as an
 * audit without history asks for it; `only` keeps those domains (none: the maintenance section
 * alone) and `cause: false` leaves the cause section out. With the names of the domains probed.
 */
export async function typicalProbe(
  manifests: string,
  options: { only?: (domain: AnyDomain) => boolean; cause?: boolean } = {},
): Promise<{ script: string; domains: string[] }> {
  const loaded = await loadFleet(manifests);
  const node = loaded.nodes[0]!;
  const domains = auditedDomains(node)
    .filter(options.only ?? (() => true))
    .map((domain) => ({ domain, declared: declaredFor(domain, node.spec) }));
  const cause = options.cause === false ? undefined : {};
  return {
    script: assembleProbe(domains, fleetAuditSettings(loaded), cause).script,
    domains: domains.map((d) => d.domain.name),
  };
}
