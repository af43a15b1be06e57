import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assembleProbe, defaultAuditSettings, probeSections } from "../../../src/audit/node.js";
import type { AnyDomain } from "../../../src/domains/registry.js";
import { files } from "../../../src/domains/files/index.js";
import { sysctl } from "../../../src/domains/sysctl/index.js";
import { buildProbe, probeContext } from "../../../src/probe/script.js";

const settings = defaultAuditSettings();
const declare = (
  sysctls: Record<string, string>,
  paths: string[],
): { domain: AnyDomain; declared: unknown }[] => [
  { domain: sysctl, declared: sysctls },
  { domain: files, declared: paths.map((path) => ({ path, contents: "x\n" })) },
];

/** The probe built directly, without the cache, for a given nonce. */
function uncached(domains: ReturnType<typeof declare>, nonce: string, options = settings): string {
  const ctx = probeContext(nonce, options.maxFileBytes);
  return buildProbe(nonce, probeSections(domains, options, false, ctx), ctx.statAsks).script;
}

describe("probe assembly per distinct spec", () => {
  it("gives every node its own nonce in the same script the uncached build gives", () => {
    const first = assembleProbe(declare({ "vm.swappiness": "10" }, ["/etc/a"]), settings);
    // Equal declarations in other objects, as nodes whose layers were merged apart have them.
    const domains = declare({ "vm.swappiness": "10" }, ["/etc/a"]);
    const second = assembleProbe(domains, settings);
    assert.notEqual(first.nonce, second.nonce);
    assert.equal(first.script, uncached(domains, first.nonce));
    assert.equal(second.script, uncached(domains, second.nonce));
    assert.ok(!second.script.includes(first.nonce));
  });

  it("builds another script for another declaration or other settings", () => {
    const cases = [
      { domains: declare({ "vm.swappiness": "10" }, ["/etc/a"]), settings },
      { domains: declare({ "vm.swappiness": "10" }, ["/etc/b"]), settings },
      { domains: declare({ "vm.swappiness": "10", "net.core.somaxconn": "1" }, []), settings },
      { domains: declare({}, ["/etc/a"]), settings: { ...settings, maxFileBytes: 77 } },
      { domains: declare({}, ["/etc/a"]), settings: { ...settings, maintenanceMarker: "/run/m" } },
      { domains: declare({}, ["/etc/a"]), settings },
    ];
    for (const { domains, settings: options } of cases) {
      const probe = assembleProbe(domains, options);
      assert.equal(probe.script, uncached(domains, probe.nonce, options));
    }
  });
});
