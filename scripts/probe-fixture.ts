// Prints one domain's snapshot probe with a fixed nonce, so what a host answers can be committed
// as a test fixture:  npx tsx scripts/probe-fixture.ts routes | sh -s > test/fixtures/routes/x.txt
import { domainByName } from "../src/domains/registry.js";
import { buildProbe, probeContext } from "../src/probe/script.js";
import { FIXTURE_NONCE } from "../test/unit/domains/fixtures.js";

const name = process.argv[2] ?? "";
const domain = domainByName(name);
if (!domain) {
  console.error(`usage: probe-fixture.ts <domain>; unknown domain "${name}"`);
  process.exit(2);
}
const ctx = probeContext(FIXTURE_NONCE, 65536);
process.stdout.write(
  buildProbe(FIXTURE_NONCE, [{ name, script: domain.probe(undefined, ctx), awk: domain.awk }])
    .script,
);
