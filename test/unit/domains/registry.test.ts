import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { DOMAIN_NAMES, DOMAINS } from "../../../src/domains/registry.js";
import { sampleOf } from "../../support/samples.js";

const domainsDir = new URL("../../../src/domains/", import.meta.url);
const folders = readdirSync(domainsDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

test("every domain folder under src/domains is registered", () => {
  assert.deepEqual(DOMAINS.map((d) => d.name).sort(), folders);
});

test("the domain names come from the registry alone: the contract names none", async () => {
  assert.deepEqual(
    [...DOMAIN_NAMES],
    DOMAINS.map((d) => d.name),
  );
  const contract = await readFile(new URL("domain.ts", domainsDir), "utf8");
  for (const name of DOMAIN_NAMES)
    assert.doesNotMatch(contract, new RegExp(`"${name}"`), `src/domains/domain.ts names ${name}`);
});

test("each folder's index.ts exports the registered domain of its own name", async () => {
  for (const folder of folders) {
    const module: Record<string, unknown> = await import(
      new URL(`${folder}/index.ts`, domainsDir).href
    );
    const registered = DOMAINS.find((d) => d.name === folder);
    assert.ok(
      Object.values(module).includes(registered),
      `src/domains/${folder}/index.ts does not export the domain named ${folder}`,
    );
  }
});

test("each registered domain has a sample with the tests, typed by its domain", async () => {
  for (const domain of DOMAINS) {
    const file = `test/support/samples/${domain.name}.ts`;
    const text = await readFile(new URL(`../../../${file}`, import.meta.url), "utf8").catch(
      () => "",
    );
    // The type is what makes the compiler check the sample against the domain's declaration.
    assert.match(
      text,
      /^export const sample: DomainSample<typeof \w+> = /m,
      `${file} must export \`sample: DomainSample<typeof <its domain>>\` (docs/adding-a-domain.md)`,
    );
    assert.ok(await sampleOf(domain));
  }
});

test("docs/adding-a-domain.md lists the files a domain adds, each of them existing", async () => {
  const doc = await readFile(new URL("../../../docs/adding-a-domain.md", import.meta.url), "utf8");
  const table = doc.split("## Files to add or change")[1]!.split("\n## ")[0]!;
  const files = [...table.matchAll(/^\| `([^`]+)`/gm)].map((m) => m[1]!);
  assert.ok(files.includes("test/support/samples/<name>.ts"), files.join(", "));
  for (const name of folders)
    for (const file of files.filter(
      (f) => f.startsWith("src/domains/<name>/") || f.startsWith("test/support/samples/<name>"),
    ))
      assert.ok(
        existsSync(new URL(`../../../${file.replace("<name>", name)}`, import.meta.url)),
        `${file} for ${name}`,
      );
  for (const file of files.filter((f) => !f.includes("<name>") && !f.includes("*")))
    assert.ok(existsSync(new URL(`../../../${file}`, import.meta.url)), file);
});
