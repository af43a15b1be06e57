// Typed questions about the `yaml` library's nodes, so the editor narrows instead of casting.
import {
  isMap,
  isNode,
  isScalar,
  isSeq,
  type Node as YamlNode,
  type Pair,
  type Scalar,
  type YAMLMap,
  type YAMLSeq,
} from "yaml";
import { ManifestEditError } from "../../errors.js";

export type { YamlNode };
export type Collection = YAMLMap<unknown, unknown> | YAMLSeq<unknown>;
export type AnyPair = Pair<unknown, unknown>;

export const isCollection = (node: unknown): node is Collection => isMap(node) || isSeq(node);

/** A map or list written in block style (one entry a line), not `{...}` / `[...]`. */
export const isBlockCollection = (node: unknown): node is Collection =>
  isCollection(node) && !node.flow;

/**
 * A value that is not a scalar and not in flow style: written on lines of its own below its key.
 */
export const isBlockValue = (node: unknown): boolean =>
  isNode(node) && !isScalar(node) && !isFlowCollection(node);

/** A map or list written in flow style: `{...}` / `[...]`. */
export const isFlowCollection = (node: unknown): node is Collection =>
  isCollection(node) && !!node.flow;

/** A value held in a pair or a list, as a node (null for an empty value). */
export const asNode = (value: unknown): YamlNode | null => (isNode(value) ? value : null);

/** The scalar, when `node` is one. */
export const asScalar = (node: unknown): Scalar | null => (isScalar(node) ? node : null);

/** Where a node starts and ends in the text; every node of a parsed file has a position. */
export function span(node: unknown): [start: number, end: number] {
  if (isNode(node) && node.range) return [node.range[0], node.range[1]];
  throw new ManifestEditError("a YAML node without a position in the file");
}

export const startOf = (node: unknown): number => span(node)[0];
export const endOf = (node: unknown): number => span(node)[1];

/** The plain data a node holds (a non-node value is its own data). */
export const dataOf = (value: unknown): unknown => (isNode(value) ? value.toJSON() : value);
