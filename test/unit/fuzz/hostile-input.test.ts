// Property tests with random, hostile input: manifests into the loader, values into the accept
// editor and the snapshot writer. Whatever comes in, the loader rejects with ManifestErrors and the
// editor with ManifestEditError, nothing else; whatever is written reads back the same in the
// `yaml` library (1.2 and 1.1) and in PyYAML (YAML 1.1, what Ansible and yamllint read).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import { parse, stringify } from "yaml";
import { ManifestEditError, ManifestErrors } from "../../../src/errors.js";
import { loadFleet } from "../../../src/manifest/load.js";
import { applyChanges } from "../../../src/manifest/edit/apply.js";
import type { DeclaredChange } from "../../../src/manifest/edit/changes.js";
import { specListShapes } from "../../../src/manifest/lists.js";
import type { Ticket } from "../../../src/manifest/tickets.js";
import { ticketYaml } from "../../../src/propose/ticket.js";
import { stringifyPortable } from "../../../src/text/yaml-scalar.js";
import { pyyamlLoad } from "../../support/pyyaml.js";
import { allSamples } from "../../support/samples.js";
import { removeTree, writeTree } from "../../support/tree.js";

const SAMPLES = await allSamples();

// Fixed seeds: a failure reproduces; fast-check prints the seed and path of a counterexample.
const RUNS = { seed: 20261130, numRuns: 200 } as const;

const TRICKY = [
  "=",
  "<<",
  "<‹",
  "~",
  "null",
  "yes",
  "No",
  "on",
  "y",
  "1:20",
  "1:2.3",
  "0777",
  "0o17",
  "0x1F",
  "1_000",
  "._",
  ".inf",
  "2026-03-01",
  "2001-12-14t21:59:43.10-05:00",
  "- x",
  "? x",
  ": x",
  "a: b",
  "a #b",
  "#c",
  "&a",
  "*a",
  "!t",
  "%d",
  "@x",
  "`x",
  "'q",
  '"q',
  "{",
  "[",
  "|",
  ">",
  "a,b",
  "[a, b]",
  " lead",
  "trail ",
  "two  spaces",
  "\t",
  "",
  "\x1b[2J",
  "\x07",
  "\r",
  "\0",
  "\u202e",
  "\u2028",
  "\u2029",
  "\u0085",
  "\ufeff",
  "\u200b",
  "\u009b",
  "\x7f",
  "\ud800",
  "\udc00",
  "\ufffe",
  "\u{e0041}",
  "::error::x",
  "\n",
  "a\nb",
  "a\n",
  "\n\n",
  "  x\ny",
  "x \ny",
  "café ☕",
  "__proto__",
];
const tricky = fc.constantFrom(...TRICKY);
/** Strings made of tricky pieces and arbitrary code points. */
const hostileString = fc.oneof(
  { arbitrary: tricky, weight: 4 },
  fc.string({ unit: "binary", maxLength: 12 }),
  fc
    .array(fc.oneof(tricky, fc.string({ unit: "binary", maxLength: 3 })), { maxLength: 5 })
    .map((parts) => parts.join("")),
);
const scalar = fc.oneof(
  { arbitrary: hostileString, weight: 6 },
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
);

/** Compares as JSON text: -0 and 0, and PyYAML's int/float spellings, are the same value here. */
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

async function assertPyYamlReadsSame(cases: { text: string; value: unknown }[]): Promise<void> {
  const results = await pyyamlLoad(cases.map((c) => c.text));
  results.forEach((result, i) => {
    const { text, value } = cases[i]!;
    assert.ok(
      "value" in result,
      `PyYAML refused:\n${text}\n${"error" in result ? result.error : ""}`,
    );
    assert.ok(
      same(result.value, value),
      `PyYAML reads ${JSON.stringify(result.value)}, not ${JSON.stringify(value)}, from:\n${text}`,
    );
  });
}

describe("the accept editor with random values", () => {
  const LISTS = specListShapes();
  const sample = (file: string) =>
    readFileSync(new URL(`../../../fleet-manifests/${file}`, import.meta.url), "utf8");
  const BASES = [
    sample("nodes/web-02.yaml"),
    sample("groups/web.yaml"),
    "system:\n  kernel_version: '6.1'\n  sysctl_parameters: { vm.swappiness: 10 }\nfiles:\n  - { path: /etc/a, contents: \"x\\n\" }\n",
    'system:\n  sysctl_parameters:\n    - net.ipv4.ip_forward = 1\npackages:\n  installed_manifest:\n    nginx: "*"\n',
    "files:\n  - path: /etc/motd\n    contents: |\n      hello\n",
    "",
  ];
  const change = fc.oneof(
    fc.record({
      path: fc.tuple(
        fc.constant("system"),
        fc.constant("sysctl_parameters"),
        fc.oneof(tricky, fc.constant("vm.swappiness")),
      ),
      value: scalar,
    }),
    fc.record({
      path: fc.tuple(fc.constant("packages"), fc.constant("installed_manifest"), hostileString),
      value: scalar,
    }),
    fc.record({
      path: fc.tuple(
        fc.constant("files"),
        fc.constantFrom("/etc/a", "/etc/motd", "/etc/new"),
        fc.constantFrom("contents", "mode", "owner"),
      ),
      value: scalar,
    }),
    fc.record({
      path: fc.tuple(fc.constant("system"), fc.constant("kernel_version")),
      value: scalar,
    }),
    fc.record({
      path: fc.tuple(fc.constant("networking"), fc.constant("listening_ports")),
      value: fc.array(hostileString, { maxLength: 3 }),
    }),
  ) as fc.Arbitrary<DeclaredChange>;

  it("throws nothing but ManifestEditError, and what it writes reads back equal in yaml 1.2, yaml 1.1 and PyYAML", async () => {
    const written: { text: string; value: unknown }[] = [];
    fc.assert(
      fc.property(
        fc.constantFrom(...BASES),
        fc.array(change, { minLength: 1, maxLength: 3 }),
        (base, changes) => {
          let text: string;
          try {
            text = applyChanges(base, changes, LISTS);
          } catch (error) {
            if (error instanceof ManifestEditError) return;
            throw error;
          }
          const value = parse(text) ?? null;
          assert.ok(
            same(parse(text, { version: "1.1" }) ?? null, value),
            `yaml 1.1 reads differently:\n${text}`,
          );
          written.push({ text, value });
        },
      ),
      RUNS,
    );
    assert.ok(
      written.length > RUNS.numRuns / 2,
      `only ${written.length} edits were made: the property checks too little`,
    );
    await assertPyYamlReadsSame(written);
  });
});

describe("snapshot's YAML writer with random live state", () => {
  const spec = fc.dictionary(
    hostileString,
    fc.oneof(
      scalar,
      fc.array(scalar, { maxLength: 3 }),
      fc.dictionary(hostileString, scalar, { maxKeys: 3 }),
    ),
    { maxKeys: 4 },
  );

  it("writes no unprintable character raw, and every reader reads the value back", async () => {
    const written: { text: string; value: unknown }[] = [];
    fc.assert(
      fc.property(spec, (value) => {
        const text = stringifyPortable(value);
        assert.doesNotMatch(text, /(?![\t\n])[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029]/u, text);
        assert.ok(same(parse(text), value), `yaml reads differently:\n${text}`);
        assert.ok(
          same(parse(text, { version: "1.1" }), value),
          `yaml 1.1 reads differently:\n${text}`,
        );
        written.push({ text, value });
      }),
      RUNS,
    );
    await assertPyYamlReadsSame(written);
  });
});

describe("the ticket writer with random host text", () => {
  it("writes a ticket every reader reads back as it was, PyYAML too", async () => {
    const written: { text: string; value: unknown }[] = [];
    fc.assert(
      fc.property(hostileString, scalar, scalar, (key, declared, live) => {
        const ticket: Ticket = {
          id: "sysctl-x-0123456789abcdef",
          status: "open",
          domain: "sysctl",
          key,
          declared,
          live,
          severity: "medium",
          nodes: ["web-01"],
          remediation: "Apply the manifest baseline",
          detected: "2026-03-02T06:00:00.000Z",
          signature: "0123456789abcdef",
        };
        const text = ticketYaml(ticket);
        assert.doesNotMatch(text, /(?![\t\n])[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029]/u, text);
        assert.ok(same(parse(text), ticket), `yaml reads differently:\n${text}`);
        written.push({ text, value: ticket });
      }),
      RUNS,
    );
    await assertPyYamlReadsSame(written);
  });
});

describe("the manifest loader with random manifests", () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map(removeTree)));

  // The spec's own keys, each domain's place and the keys its sample declares.
  const keysIn = (value: unknown): string[] =>
    Array.isArray(value)
      ? value.flatMap(keysIn)
      : value !== null && typeof value === "object"
        ? Object.entries(value).flatMap(([k, v]) => [k, ...keysIn(v)])
        : [];
  const VOCABULARY = [
    ...new Set([
      "host",
      "groups",
      "ssh",
      "policy",
      "ignore",
      "audit",
      "__proto__",
      "constructor",
      ...SAMPLES.flatMap(({ domain, sample }) => [...domain.specPath, ...keysIn(sample.declared)]),
    ]),
  ];
  const key = fc.oneof(fc.constantFrom(...VOCABULARY), hostileString);
  const { tree } = fc.letrec((tie) => ({
    tree: fc.oneof(
      { depthSize: "small" },
      scalar,
      fc.array(tie("tree"), { maxLength: 3 }),
      fc.dictionary(key, tie("tree"), { maxKeys: 4 }),
    ),
  }));
  const ALIAS_BOMB = `a: &a ["x","x","x","x","x","x","x","x","x"]\n${"bcdefgh"
    .split("")
    .map((c, i) => `${c}: &${c} [${Array(9).fill(`*${"abcdefgh"[i]}`).join(",")}]`)
    .join("\n")}\n`;
  const manifest = fc.oneof(
    fc.string({ unit: "binary", maxLength: 60 }),
    tree.map((t) => stringify(t)),
    fc.dictionary(key, tree, { maxKeys: 5 }).map((t) => stringify(t)),
    fc.constantFrom(
      ALIAS_BOMB,
      `${"[".repeat(5000)}${"]".repeat(5000)}`,
      "groups: [g]\n",
      "groups: [g, g]\n",
      "groups: [n]\n",
      "? [a]\n: b\n",
      "!!binary x: y\n",
      "*x\n",
    ),
  );

  it("loads or rejects with ManifestErrors, never any other exception", async () => {
    await fc.assert(
      fc.asyncProperty(manifest, manifest, manifest, async (fleetYaml, group, node) => {
        const dir = await writeTree({
          "fleet.yaml": fleetYaml,
          "groups/g.yaml": group,
          "nodes/n.yaml": node,
        });
        dirs.push(dir);
        try {
          await loadFleet(dir);
        } catch (error) {
          if (!(error instanceof ManifestErrors)) throw error;
          for (const e of error.errors)
            assert.ok(e.location.file.length > 0, "every error names a file");
        }
      }),
      { ...RUNS, numRuns: 150 },
    );
  });
});
