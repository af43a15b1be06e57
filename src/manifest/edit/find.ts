// Finding where a canonical spec path lands in a manifest file's YAML tree: map keys, keyed-list
// items by their key, `- name = value` items by their name, other list items by index.
import { isMap, isNode, isScalar, isSeq, type Document } from "yaml";
import { ManifestEditError } from "../../errors.js";
import { isListFormAt, keyFieldAt, readListItem, type SpecListShapes } from "../lists.js";
import {
  asNode,
  isFlowCollection,
  type AnyPair,
  type Collection,
  type YamlNode,
} from "./yaml-nodes.js";
import { showPath, type SpecPath } from "../../spec-path.js";

/** Where a spec path landed in the file. */
export interface Hit {
  node: YamlNode | null;
  /** The map pair holding `node`, when it is a map value. */
  pair?: AnyPair;
  parent?: Collection;
  /** Inside a flow collection: only flow text may be written here. */
  inFlow: boolean;
  /** An item of a `- name = value` list. */
  listFormItem?: boolean;
  /** What `path` prefix this node stands for. */
  path: SpecPath;
}

/** The nodes `path` passes through, from the document's root: as far as the file declares it. */
export function resolve(doc: Document, lists: SpecListShapes, path: SpecPath): Hit[] {
  const root = doc.contents;
  const hits: Hit[] = [
    { node: isScalar(root) && root.value === null ? null : root, inFlow: false, path: [] },
  ];
  for (const [i, part] of path.entries()) {
    const at = hits[i]!;
    const prefix = path.slice(0, i);
    const inFlow = at.inFlow || isFlowCollection(at.node);
    const keyField = keyFieldAt(lists, prefix);
    const listForm = isListFormAt(lists, prefix);
    let next: Hit | undefined;
    if (isMap(at.node)) {
      const pair = at.node.items.find(
        (p) => isScalar(p.key) && String(p.key.value) === String(part),
      );
      if (pair)
        next = {
          node: asNode(pair.value),
          pair,
          parent: at.node,
          inFlow,
          path: path.slice(0, i + 1),
        };
    } else if (isSeq(at.node)) {
      const seq = at.node;
      const item = seq.items.find((it) =>
        keyField !== undefined
          ? isMap(it) && String(it.get(keyField)) === String(part)
          : listForm
            ? isScalar(it) &&
              typeof it.value === "string" &&
              readListItem(it.value)?.[0] === String(part)
            : typeof part === "number" && seq.items[part] === it,
      );
      if (isNode(item))
        next = {
          node: item,
          parent: seq,
          inFlow,
          listFormItem: listForm && keyField === undefined,
          path: path.slice(0, i + 1),
        };
    }
    if (!next) break;
    hits.push(next);
    if (next.listFormItem && i < path.length - 1)
      throw new ManifestEditError(`${showPath(path)}: a "name = value" item holds no fields`, path);
  }
  return hits;
}
