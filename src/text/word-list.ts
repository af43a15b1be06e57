// One spelling of a list of words, shared by every layer that shows values.
/**
 * A list of words as an operator writes one (`rw,nosuid`, as mount options are), never as JSON:
 * undefined for any other value, or where a word holds a comma, a blank or a quote.
 */
export function wordList(value: unknown): string | undefined {
  if (!Array.isArray(value)) return undefined;
  if (value.length === 0) return "(none)";
  return value.every((word) => typeof word === "string" && /^[^\s,"]+$/.test(word))
    ? value.join(",")
    : undefined;
}
