/**
 * Bytes from a host, which the transport gives one per character (latin1), as the UTF-8 text they
 * are. Text that is all ASCII, most of what a host prints, is that text already: no buffer is made
 * for it (a node's probe output is decoded field by field, a few hundred times).
 */
export const utf8 = (latin1: string): string =>
  /^[\x00-\x7f]*$/.test(latin1) ? latin1 : Buffer.from(latin1, "latin1").toString("utf8");
