// The import rules `npm run lint` checks (dependency-cruiser): no import cycle anywhere, type-only
// imports included, and the layers docs/architecture.md draws, from the top down.
// A module under src/ imports only from its own unit (a folder, or a file directly under src/)
// and from units in lower layers: never up, never sideways into another unit of its own layer.

/** @type {string[][]} Units of src/, top layer first. */
const LAYERS = [
  ["cli/"],
  ["runs/"],
  ["watch/"],
  ["audit/", "propose/", "adopt/", "schemas.ts"],
  ["drift/", "transport/"],
  ["manifest/"],
  ["report/", "probe/", "forge/"],
  ["domains/"],
  [
    "text/",
    "errors.ts",
    "collections.ts",
    "glob.ts",
    "whole-number.ts",
    "spec-path.ts",
    "crypto.ts",
  ],
];

const pattern = (unit) => unit.replaceAll(".", "\\.") + (unit.endsWith("/") ? "" : "$");
const anyOf = (units) => `^src/(${units.map(pattern).join("|")})`;
const UNITS = LAYERS.flat();

// The pure core docs/architecture.md draws: plain functions over data. propose/'s gather and
// execute modules (input, pulls, reviews, dashboard, state, lock, execute) are its I/O edge.
const PURE = [
  "drift/",
  "report/formats/",
  "manifest/edit/",
  ...[
    "accept",
    "accept-edits",
    "body",
    "branch",
    "budget",
    "bundle",
    "combine",
    "dashboard-chart",
    "desired",
    "desired-context",
    "group",
    "lift",
    "lift-proposal",
    "marker",
    "node-lists",
    "plan",
    "plan-input",
    "proposal",
    "reconcile",
    "resolve",
    "run-plan",
    "ticket",
  ].map((name) => `propose/${name}.ts`),
];

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-cycle",
      comment: "An import cycle, type-only imports included: move what both sides need to a leaf.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    // A module in no layer, on either side of an import.
    ...[
      ["from", "imports"],
      ["to", "is imported"],
    ].map(([side, does]) => ({
      name: "in-a-layer",
      comment: `A module under src/ in no layer ${does}: add its folder or file to LAYERS.`,
      severity: "error",
      from: {},
      to: {},
      [side]: { path: "^src/", pathNot: anyOf(UNITS) },
    })),
    {
      name: "no-test-code",
      comment:
        "src/ is what ships: it uses no test support (a domain's test sample lives with the tests, in test/support/samples/).",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(test|bench|scripts)/" },
    },
    {
      name: "domains-through-the-registry",
      comment:
        "A domain's folder is imported by the registry (domains/registry.ts) alone: the rest of src/, the helpers beside the contract and the other domains read a domain through the contract (domains/domain.ts) and the registry.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/domains/registry\\.ts$", "^src/domains/([^/]+)/"] },
      to: { path: "^src/domains/[^/]+/" },
    },
    {
      name: "domains-through-the-registry",
      comment:
        "A domain's folder imports no other domain's folder: what two domains share lives beside the contract.",
      severity: "error",
      from: { path: "^src/domains/([^/]+)/" },
      to: { path: "^src/domains/[^/]+/", pathNot: "^src/domains/$1/" },
    },
    {
      name: "pure-core-no-io",
      comment:
        "A pure module (PURE) imports neither forge/ nor node:fs: what it needs from GitHub or a file is gathered by its caller and passed in as data (a record's type may be named).",
      severity: "error",
      from: { path: anyOf(PURE) },
      to: {
        path: ["^src/forge/", "^(node:)?fs(/promises)?$"],
        dependencyTypesNot: ["type-only"],
      },
    },
    {
      name: "propose-uses-the-forge-seam",
      comment:
        "propose/ asks the forge through the Forge interface (forge/forge.ts) and names its records (forge/records.ts), never the GitHub client: a command or run hands it one.",
      severity: "error",
      from: { path: "^src/propose/" },
      to: { path: "^src/forge/github" },
    },
    {
      name: "no-command-imports-a-command",
      comment:
        "A command parses, calls one run and prints: what two commands share is a run (src/runs/) or a cli/ module, not another command.",
      severity: "error",
      from: { path: "^src/cli/commands/([^/]+)\\.ts$" },
      to: { path: "^src/cli/commands/", pathNot: "^src/cli/commands/$1\\.ts$" },
    },
    {
      name: "bench-uses-runs",
      comment:
        "A benchmark measures a run (src/runs/) or the built CLI, not a command's internals.",
      severity: "error",
      from: { path: "^bench/" },
      to: { path: "^src/cli/commands/" },
    },
    ...LAYERS.flatMap((layer, depth) =>
      layer.map((unit) => ({
        name: `layer:${unit}`,
        comment: `${unit} imports only from itself and the layers below it.`,
        severity: "error",
        from: { path: anyOf([unit]) },
        to: { path: "^src/", pathNot: anyOf([unit, ...LAYERS.slice(depth + 1).flat()]) },
      })),
    ),
  ],
  options: {
    // Type-only imports count: a cycle or an upward edge through types alone is still one.
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
  },
};
