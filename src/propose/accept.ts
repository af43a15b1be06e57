import type { AnyDomain, Finding, JsonValue, SpecPath } from "../domains/domain.js";

/**
 * Sets (or with undefined, deletes) the value at `relative` inside a copy of `declared`. Keyed
 * lists are addressed by item key.
 */
function setAt(
  declared: unknown,
  relative: SpecPath,
  value: JsonValue | undefined,
  listKey?: string,
): unknown {
  if (!relative.length) return value;
  const [head, ...rest] = relative;
  if (Array.isArray(declared)) {
    const index =
      typeof head === "number"
        ? head
        : declared.findIndex((item) => listKey && item?.[listKey] === head);
    const copy = [...declared];
    if (index === -1) {
      if (value !== undefined) copy.push(setAt(listKey ? { [listKey]: head } : {}, rest, value));
      return copy;
    }
    if (!rest.length && value === undefined) copy.splice(index, 1);
    else copy[index] = setAt(copy[index], rest, value);
    return copy;
  }
  const copy = { ...((declared ?? {}) as Record<string, unknown>) };
  const key = String(head);
  if (!rest.length && value === undefined) delete copy[key];
  // Defined, never assigned, and read only when the copy's own: a key named __proto__ (a sysctl
  // a contributor declared, say) becomes a key, not the copy's prototype.
  else
    Object.defineProperty(copy, key, {
      value: setAt(Object.hasOwn(copy, key) ? copy[key] : undefined, rest, value, listKey),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return copy;
}

/** The domain's declaration once this finding's live state is accepted into the manifest. */
export function acceptFinding(domain: AnyDomain, declared: unknown, finding: Finding): unknown {
  if (domain.accept) return domain.accept(declared, finding);
  const relative = finding.path.slice(domain.specPath.length);
  return setAt(
    declared,
    relative,
    finding.live === null ? undefined : finding.live,
    domain.listKey,
  );
}
