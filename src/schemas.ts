import * as z from "zod";
import { LIST_ITEM_PATTERN, SPEC_LIST_SHAPES } from "./manifest/lists.js";
import { FleetSpec, GroupSpec, NodeSpec } from "./manifest/schema.js";
import { Report } from "./report/schema.js";

type JsonSchema = Record<string, unknown>;

/**
 * Where a domain accepts the sysctl.conf-style `- key = value` list form, editors must accept it
 * too.
 */
function allowListForms(schema: JsonSchema): JsonSchema {
  for (const listPath of SPEC_LIST_SHAPES.listFormPaths) {
    let level = schema;
    for (const part of listPath.slice(0, -1))
      level = (level.properties as Record<string, JsonSchema>)[part]!;
    const properties = level.properties as Record<string, JsonSchema>;
    const key = String(listPath.at(-1));
    properties[key] = {
      anyOf: [
        properties[key],
        {
          type: "array",
          items: { type: "string", pattern: LIST_ITEM_PATTERN },
          description: "the list form: `- name = value`",
        },
      ],
    };
  }
  return schema;
}

function generate(schema: z.ZodType, title: string, io: "input" | "output"): JsonSchema {
  return {
    title,
    ...(z.toJSONSchema(schema, {
      io,
      unrepresentable: "any",
      target: "draft-2020-12",
    }) as JsonSchema),
  };
}

/** The JSON Schemas committed under schemas/, keyed by file name. */
export function jsonSchemas(): Record<string, JsonSchema> {
  return {
    "node-spec.schema.json": allowListForms(
      generate(NodeSpec, "Quartermaster node spec (fleet-manifests/nodes/<node>.yaml)", "input"),
    ),
    "group.schema.json": allowListForms(
      generate(
        GroupSpec,
        "Quartermaster group spec (fleet-manifests/groups/<group>.yaml)",
        "input",
      ),
    ),
    "fleet.schema.json": allowListForms(
      generate(FleetSpec, "Quartermaster fleet defaults (fleet-manifests/fleet.yaml)", "input"),
    ),
    "report.schema.json": generate(
      Report,
      "Quartermaster audit report (--format json), schemaVersion 1",
      "output",
    ),
  };
}
