// Type-aware rules that catch what the compiler does not: a promise nobody awaits (a lost
// error or a race), a switch over a union that misses a member, a cast that changes nothing, and
// an import that keeps all of zod in the bundle.
// Formatting is Prettier's job, so no stylistic rule lives here.
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "schemas/", "test/fixtures/"] },
  {
    files: ["**/*.ts"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@typescript-eslint": tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          // node:test collects the promises of test() and describe() itself.
          allowForKnownSafeCalls: [
            { from: "package", package: "node:test", name: ["test", "describe", "it", "suite"] },
          ],
        },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/switch-exhaustiveness-check": [
        "error",
        { considerDefaultExhaustiveForUnions: true },
      ],
      "@typescript-eslint/no-unnecessary-type-assertion": "error",
      // zod's `z` export is one object holding all of zod: the bundle cannot drop what is unused.
      "no-restricted-syntax": [
        "error",
        {
          selector: "ImportDeclaration[source.value='zod'] > ImportSpecifier[imported.name='z']",
          message: 'import * as z from "zod": the bundle then keeps only what is used.',
        },
      ],
    },
  },
  {
    // node:crypto costs a run's start several milliseconds: src/crypto.ts loads it on first use.
    files: ["src/**/*.ts"],
    ignores: ["src/crypto.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [
            {
              name: "node:crypto",
              message: "take it from src/crypto.ts, which loads node:crypto on first use.",
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
);
