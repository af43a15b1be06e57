// Extracts the GitHub REST operations the test double serves from GitHub's official OpenAPI
// description, so the double can validate every request and response without the 13 MB file.
//
// Regenerate (the package is large: install it outside the project, never as a dependency):
//   dir="$(mktemp -d)" && npm install --prefix "$dir" @octokit/openapi
//   npx tsx scripts/extract-github-openapi.ts \
//     "$dir/node_modules/@octokit/openapi/generated/api.github.com.json"
// It writes test/support/github-double/openapi-subset.json (or the path given as second argument).
//
// What it keeps: for each listed operation its parameters, JSON request body and JSON response
// bodies by status, plus every schema they reference, transitively. What it changes: `$ref`s to
// parameters and responses are inlined; OpenAPI 3.0's `nullable: true` becomes
// `anyOf: [schema, {type: "null"}]`, which ajv 8 understands; annotations (descriptions, examples,
// titles, defaults, x-* extensions) are dropped. A keyword it does not know is an error, so a
// new construct in GitHub's description is seen here rather than silently ignored by the double.
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The operations the GitHub double serves, as `METHOD path` exactly as in the description. */
export const OPERATIONS = [
  "GET /repos/{owner}/{repo}",
  "GET /repos/{owner}/{repo}/pulls",
  "POST /repos/{owner}/{repo}/pulls",
  "GET /repos/{owner}/{repo}/pulls/{pull_number}",
  "PATCH /repos/{owner}/{repo}/pulls/{pull_number}",
  "POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
  "GET /repos/{owner}/{repo}/pulls/{pull_number}/commits",
  "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge",
  "GET /repos/{owner}/{repo}/issues",
  "POST /repos/{owner}/{repo}/issues",
  "PATCH /repos/{owner}/{repo}/issues/{issue_number}",
  "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
  "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
  "POST /repos/{owner}/{repo}/issues/{issue_number}/labels",
  "GET /repos/{owner}/{repo}/labels/{name}",
  "POST /repos/{owner}/{repo}/labels",
  "GET /repos/{owner}/{repo}/git/ref/{ref}",
  "GET /repos/{owner}/{repo}/branches/{branch}",
  "DELETE /repos/{owner}/{repo}/git/refs/{ref}",
  "GET /repos/{owner}/{repo}/compare/{basehead}",
  "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
  "POST /repos/{owner}/{repo}/git/blobs",
  "GET /repos/{owner}/{repo}/git/blobs/{file_sha}",
  "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
  "GET /repos/{owner}/{repo}/git/trees/{tree_sha}",
  "POST /repos/{owner}/{repo}/git/trees",
  "POST /repos/{owner}/{repo}/git/commits",
  "POST /repos/{owner}/{repo}/git/refs",
  "PATCH /repos/{owner}/{repo}/git/refs/{ref}",
  "GET /repos/{owner}/{repo}/contents/{path}",
  "GET /user",
] as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Schema keywords that validate; everything else is annotation and is dropped or refused. */
const VALIDATING = new Set([
  "$ref",
  "type",
  "properties",
  "required",
  "items",
  "enum",
  "const",
  "format",
  "pattern",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "additionalProperties",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
  "multipleOf",
  "nullable",
]);
// `discriminator` only speeds up oneOf (GitHub's maps "array" for directory listings, which ajv
// refuses).
const ANNOTATION = new Set([
  "description",
  "example",
  "examples",
  "title",
  "default",
  "readOnly",
  "writeOnly",
  "deprecated",
  "externalDocs",
  "discriminator",
]);

function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function pointer(doc: JsonObject, ref: string): Json {
  if (!ref.startsWith("#/")) throw new Error(`external $ref not supported: ${ref}`);
  let node: Json = doc;
  for (const raw of ref.slice(2).split("/")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (!isObject(node) || !(key in node)) throw new Error(`dangling $ref: ${ref}`);
    node = node[key]!;
  }
  return node;
}

class Extractor {
  readonly schemas: Record<string, Json> = {};
  constructor(private readonly doc: JsonObject) {}

  /** Copies a schema, keeping validating keywords, collecting referenced component schemas. */
  schema(node: Json, where: string): Json {
    if (!isObject(node)) throw new Error(`${where}: schema is not an object`);
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      if (ANNOTATION.has(key) || key.startsWith("x-")) continue;
      if (!VALIDATING.has(key)) throw new Error(`${where}: unknown schema keyword "${key}"`);
      switch (key) {
        case "$ref":
          out.$ref = this.ref(String(value));
          break;
        case "properties":
          out.properties = Object.fromEntries(
            Object.entries(value as JsonObject).map(([name, s]) => [
              name,
              this.schema(s, `${where}.${name}`),
            ]),
          );
          break;
        case "items":
        case "not":
          out[key] = this.schema(value, `${where}.${key}`);
          break;
        case "additionalProperties":
          out[key] = typeof value === "boolean" ? value : this.schema(value, `${where}.*`);
          break;
        case "anyOf":
        case "oneOf":
        case "allOf":
          out[key] = (value as Json[]).map((s, i) => this.schema(s, `${where}.${key}[${i}]`));
          break;
        case "nullable":
          break;
        default:
          out[key] = value;
      }
    }
    if (node.nullable !== true) return out;
    // `null` must also pass an enum of the non-null schema, so null sits beside it, not inside.
    return { anyOf: [out, { type: "null" }] };
  }

  private ref(ref: string): string {
    const m = /^#\/components\/schemas\/([^/]+)$/.exec(ref);
    if (!m) throw new Error(`unexpected schema $ref: ${ref}`);
    const name = m[1]!;
    if (!(name in this.schemas)) {
      this.schemas[name] = true; // placeholder first: schemas refer to themselves (e.g. nested teams)
      this.schemas[name] = this.schema(pointer(this.doc, ref), name);
    }
    return ref;
  }

  private resolve(node: Json): JsonObject {
    let current = node;
    while (isObject(current) && typeof current.$ref === "string")
      current = pointer(this.doc, current.$ref);
    if (!isObject(current)) throw new Error("expected an object");
    return current;
  }

  operation(method: string, path: string): JsonObject {
    const item = this.doc.paths && isObject(this.doc.paths) ? this.doc.paths[path] : undefined;
    const op = isObject(item) ? item[method.toLowerCase()] : undefined;
    if (!isObject(op)) throw new Error(`operation not in the description: ${method} ${path}`);
    const where = String(op.operationId);
    const shared = isObject(item) && Array.isArray(item.parameters) ? item.parameters : [];
    const parameters = [...shared, ...((op.parameters as Json[] | undefined) ?? [])].map((p) => {
      const param = this.resolve(p);
      return {
        name: param.name!,
        in: param.in!,
        required: param.required === true,
        schema: this.schema(param.schema ?? {}, `${where}(${String(param.name)})`),
      };
    });
    const out: JsonObject = { operationId: op.operationId!, parameters };
    if (op.requestBody) {
      const body = this.resolve(op.requestBody);
      const json = isObject(body.content) ? body.content["application/json"] : undefined;
      if (!isObject(json)) throw new Error(`${where}: request body is not application/json`);
      out.requestBody = {
        required: body.required === true,
        content: {
          "application/json": { schema: this.schema(json.schema ?? {}, `${where}.body`) },
        },
      };
    }
    const responses: JsonObject = {};
    for (const [status, raw] of Object.entries(this.resolve(op.responses ?? null))) {
      const response = this.resolve(raw);
      const content = isObject(response.content) ? response.content : {};
      const json = content["application/json"] ?? content["application/scim+json"];
      responses[status] =
        isObject(json) && json.schema
          ? {
              content: {
                "application/json": { schema: this.schema(json.schema, `${where}.${status}`) },
              },
            }
          : {};
    }
    out.responses = responses;
    return out;
  }
}

export function extract(doc: JsonObject): JsonObject {
  const extractor = new Extractor(doc);
  const paths: Record<string, JsonObject> = {};
  for (const entry of OPERATIONS) {
    const [method, path] = entry.split(" ") as [string, string];
    (paths[path] ??= {})[method.toLowerCase()] = extractor.operation(method, path);
  }
  // Responses every operation can give but the description leaves out (401, 403 rate limits).
  for (const name of ["basic-error", "validation-error"])
    extractor.schema({ $ref: `#/components/schemas/${name}` }, name);
  const info = isObject(doc.info) ? doc.info : {};
  const schemas = Object.fromEntries(
    Object.entries(extractor.schemas).sort(([a], [b]) => a.localeCompare(b)),
  );
  return {
    openapi: doc.openapi ?? "3.0.3",
    info: { title: `Subset of ${String(info.title)}`, version: info.version ?? "unknown" },
    paths,
    components: { schemas },
  };
}

async function main(): Promise<void> {
  const [source, target] = process.argv.slice(2);
  if (!source) {
    console.error(
      "usage: tsx scripts/extract-github-openapi.ts <api.github.com.json> [output.json]",
    );
    process.exit(2);
  }
  const doc = JSON.parse(await readFile(source, "utf8")) as JsonObject;
  const here = dirname(fileURLToPath(import.meta.url));
  const output =
    target ?? join(here, "..", "test", "support", "github-double", "openapi-subset.json");
  const text = `${JSON.stringify(extract(doc), null, 1)}\n`;
  await writeFile(output, text);
  console.log(`wrote ${output}: ${OPERATIONS.length} operations, ${text.length} bytes`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
