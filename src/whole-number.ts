// One reading of a whole number for every flag and setting that takes one: decimal digits only, so
// `1e3`, `0x10`, `""`, ` 5`, `1.0` and `-1` are refused rather than read as Number() reads them.

/** The whole number `text` writes, if it is one of at least `min` and at most 2^53 - 1. */
export function wholeNumber(text: string, min = 0): number | undefined {
  if (!/^\d+$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) && value >= min ? value : undefined;
}
