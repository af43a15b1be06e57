// Validates the double's traffic against GitHub's own OpenAPI description (the committed subset),
// so a bot sending a wrong body, or a double answering in a shape GitHub never uses, is caught.
import { readFileSync } from "node:fs";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";

interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  schema: Schema;
}
type Schema = Record<string, unknown>;
interface Operation {
  operationId: string;
  parameters: Parameter[];
  requestBody?: { required: boolean; content: { "application/json": { schema: Schema } } };
  responses: Record<string, { content?: { "application/json": { schema: Schema } } }>;
}
interface Subset {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

export interface MatchedOperation {
  operationId: string;
  template: string;
  params: Record<string, string>;
}

/** Path parameters that may hold slashes (refs, file paths, `base...head`). */
const GREEDY = new Set(["ref", "path", "basehead", "branch"]);
const COMPONENTS_ID = "github-components";

const FORMATS: Record<string, RegExp | true> = {
  "date-time": /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/,
  uri: /^[a-z][a-z0-9+.-]*:[^\s]*$/i,
  "repo.nwo": /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/,
  email: /^[^\s@]+@[^\s@]+$/,
  int64: true,
};

export class OpenApiValidator {
  private readonly ajv = new Ajv({
    allErrors: true,
    strict: true,
    strictTypes: false,
    allowUnionTypes: true,
    // Each component compiled once and called, not inlined into every schema that names it, and
    // the generated code left unoptimized: the same checks, compiled in 40% of the CPU.
    inlineRefs: false,
    code: { optimize: false },
  });
  private readonly routes: {
    method: string;
    template: string;
    regex: RegExp;
    names: string[];
    operation: Operation;
  }[] = [];
  private readonly compiled = new Map<Schema, ValidateFunction>();

  constructor(file: URL) {
    const subset = JSON.parse(readFileSync(file, "utf8")) as Subset;
    for (const [name, format] of Object.entries(FORMATS)) this.ajv.addFormat(name, format);
    this.ajv.addSchema({ $id: COMPONENTS_ID, $defs: relink(subset.components.schemas) });
    for (const [template, methods] of Object.entries(subset.paths)) {
      const names: string[] = [];
      const pattern = template.replace(/\{(\w+)\}/g, (_, name: string) => {
        names.push(name);
        return GREEDY.has(name) ? "(.+)" : "([^/]+)";
      });
      for (const [method, operation] of Object.entries(methods)) {
        if (operation.requestBody)
          closeObjects(operation.requestBody.content["application/json"].schema);
        this.routes.push({
          method: method.toUpperCase(),
          template,
          regex: new RegExp(`^${pattern}$`),
          names,
          operation,
        });
      }
    }
  }

  match(method: string, pathname: string): MatchedOperation | undefined {
    for (const route of this.routes) {
      if (route.method !== method) continue;
      const m = route.regex.exec(pathname);
      if (!m) continue;
      const params = Object.fromEntries(
        route.names.map((name, i) => [name, decodeURIComponent(m[i + 1]!)]),
      );
      return { operationId: route.operation.operationId, template: route.template, params };
    }
    return undefined;
  }

  private operation(id: string): Operation {
    const route = this.routes.find((r) => r.operation.operationId === id);
    if (!route) throw new Error(`no operation ${id} in the OpenAPI subset`);
    return route.operation;
  }

  private validator(schema: Schema): ValidateFunction {
    let fn = this.compiled.get(schema);
    if (!fn) {
      fn = this.ajv.compile(relink(schema));
      this.compiled.set(schema, fn);
    }
    return fn;
  }

  /** Problems with a request's path, query and body; empty when GitHub would accept its shape. */
  checkRequest(
    match: MatchedOperation,
    query: URLSearchParams,
    body: unknown,
    hasBody: boolean,
  ): string[] {
    const op = this.operation(match.operationId);
    const problems: string[] = [];
    const known = new Set<string>();
    for (const param of op.parameters) {
      if (param.in === "header") continue;
      known.add(`${param.in}:${param.name}`);
      const raw =
        param.in === "path" ? match.params[param.name] : (query.get(param.name) ?? undefined);
      if (raw === undefined) {
        if (param.required) problems.push(`${param.in} parameter ${param.name} is required`);
        continue;
      }
      const fn = this.validator(param.schema);
      if (!fn(coerce(raw, param.schema)))
        problems.push(...describe(fn.errors, `${param.in} parameter ${param.name}`));
    }
    for (const name of new Set(query.keys())) {
      if (!known.has(`query:${name}`))
        problems.push(`query parameter ${name} is not defined for ${match.operationId}`);
    }
    if (op.requestBody) {
      if (!hasBody) {
        if (op.requestBody.required) problems.push("request body is required");
      } else {
        const fn = this.validator(op.requestBody.content["application/json"].schema);
        if (!fn(body)) problems.push(...describe(fn.errors, "request body"));
      }
    } else if (hasBody && !(isPlainObject(body) && Object.keys(body).length === 0)) {
      problems.push(`${match.operationId} takes no request body`);
    }
    return problems;
  }

  /** Problems with a response the double is about to send. */
  checkResponse(operationId: string, status: number, body: unknown, hasBody: boolean): string[] {
    const op = this.operation(operationId);
    const documented = op.responses[String(status)];
    let schema = documented?.content?.["application/json"].schema;
    if (!documented) {
      // GitHub answers any operation with 401, 403, 404, 422 and 5xx errors it does not list.
      if (status < 400) return [`status ${status} is not documented for ${operationId}`];
      schema = { $ref: "#/components/schemas/basic-error" };
    }
    // Some error answers are described without a body, yet GitHub always sends its error object.
    if (!schema && status >= 400) schema = { $ref: "#/components/schemas/basic-error" };
    if (!schema)
      return hasBody ? [`status ${status} of ${operationId} has no body, but one was sent`] : [];
    const fn = this.validator(schema);
    return fn(body) ? [] : describe(fn.errors, `response ${status}`);
  }
}

/** Points `#/components/schemas/x` at the schema registered under COMPONENTS_ID. */
function relink<T>(node: T): T {
  if (Array.isArray(node)) return node.map(relink) as T;
  if (!isPlainObject(node)) return node;
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) =>
      key === "$ref" && typeof value === "string"
        ? [key, value.replace("#/components/schemas/", `${COMPONENTS_ID}#/$defs/`)]
        : [key, relink(value)],
    ),
  ) as T;
}

/** GitHub ignores unknown body fields; the double refuses them, so a misspelt field is caught. */
function closeObjects(schema: Schema): void {
  const properties = schema.properties as Record<string, Schema> | undefined;
  if (schema.type === "object" && properties && schema.additionalProperties === undefined)
    schema.additionalProperties = false;
  const children = [
    ...Object.values(properties ?? {}),
    ...[schema.items].filter(isPlainObject),
    ...(["anyOf", "oneOf", "allOf"] as const).flatMap(
      (k) => (schema[k] as Schema[] | undefined) ?? [],
    ),
  ];
  children.forEach(closeObjects);
}

function coerce(raw: string, schema: Schema): unknown {
  if (schema.type === "integer" && /^-?\d+$/.test(raw)) return Number(raw);
  if (schema.type === "boolean" && (raw === "true" || raw === "false")) return raw === "true";
  return raw;
}

function describe(errors: ErrorObject[] | null | undefined, what: string): string[] {
  return (errors ?? []).map(
    (e) =>
      `${what}${e.instancePath} ${e.message ?? e.keyword}${e.params ? ` ${JSON.stringify(e.params)}` : ""}`,
  );
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
