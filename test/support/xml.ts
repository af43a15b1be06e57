// A strict, small XML 1.0 parser for checking generated documents: it throws on anything that
// is not well-formed (illegal characters, unknown entities, mismatched tags, duplicate or
// unquoted attributes, text outside the root) and returns the element tree. No DTDs, no
// namespaces processing, ASCII names only: enough for the XML Quartermaster writes.

export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  /** Character data directly inside this element, CDATA included, concatenated. */
  text: string;
}

export class XmlError extends Error {
  override readonly name = "XmlError";
  constructor(offset: number, message: string) {
    super(`offset ${offset}: ${message}`);
  }
}

const NAME = /^[A-Za-z_:][A-Za-z0-9._:-]*/;
const PREDEFINED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

function isXmlChar(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}

export function parseXml(source: string): XmlElement {
  for (let i = 0; i < source.length; i++) {
    const code = source.codePointAt(i)!;
    if (!isXmlChar(code))
      throw new XmlError(
        i,
        `character U+${code.toString(16).padStart(4, "0")} is not allowed in XML 1.0`,
      );
    if (code > 0xffff) i++;
  }
  let pos = 0;
  const fail = (message: string): never => {
    throw new XmlError(pos, message);
  };
  const startsWith = (s: string) => source.startsWith(s, pos);
  const skipSpace = () => {
    while (pos < source.length && " \t\r\n".includes(source[pos]!)) pos++;
  };
  const readName = (): string => {
    const m = NAME.exec(source.slice(pos, pos + 200));
    if (!m) fail("expected a name");
    pos += m![0].length;
    return m![0];
  };
  const decode = (raw: string, at: number): string =>
    raw.replace(/&([^;]*);|&/g, (whole, ref: string | undefined) => {
      if (ref === undefined) throw new XmlError(at, "bare & (must be &amp;)");
      if (Object.hasOwn(PREDEFINED, ref)) return PREDEFINED[ref]!;
      const m = /^#(?:x([0-9a-fA-F]+)|([0-9]+))$/.exec(ref);
      if (!m) throw new XmlError(at, `unknown entity ${whole}`);
      const code = m[1] !== undefined ? parseInt(m[1], 16) : parseInt(m[2]!, 10);
      if (!isXmlChar(code))
        throw new XmlError(at, `character reference ${whole} names a character XML 1.0 forbids`);
      return String.fromCodePoint(code);
    });
  const skipMisc = () => {
    for (;;) {
      skipSpace();
      if (startsWith("<!--")) skipComment();
      else if (startsWith("<?")) skipPi();
      else return;
    }
  };
  const skipComment = () => {
    const end = source.indexOf("-->", pos + 4);
    if (end < 0) fail("unterminated comment");
    if (source.slice(pos + 4, end).includes("--")) fail("-- inside a comment");
    pos = end + 3;
  };
  const skipPi = () => {
    pos += 2;
    if (readName().toLowerCase() === "xml") fail("XML declaration not at the start");
    const end = source.indexOf("?>", pos);
    if (end < 0) fail("unterminated processing instruction");
    pos = end + 2;
  };

  const parseElement = (): XmlElement => {
    if (!startsWith("<")) fail("expected an element");
    pos++;
    const element: XmlElement = { name: readName(), attributes: {}, children: [], text: "" };
    for (;;) {
      const hadSpace = pos < source.length && " \t\r\n".includes(source[pos]!);
      skipSpace();
      if (startsWith("/>")) {
        pos += 2;
        return element;
      }
      if (startsWith(">")) {
        pos++;
        break;
      }
      if (!hadSpace) fail("expected whitespace before an attribute");
      const attr = readName();
      skipSpace();
      if (source[pos] !== "=") fail(`expected = after attribute ${attr}`);
      pos++;
      skipSpace();
      const quote = source[pos];
      if (quote !== '"' && quote !== "'") fail(`value of ${attr} is not quoted`);
      const end = source.indexOf(quote!, pos + 1);
      if (end < 0) fail(`unterminated value of ${attr}`);
      const raw = source.slice(pos + 1, end);
      if (raw.includes("<")) fail(`< in the value of ${attr}`);
      if (Object.hasOwn(element.attributes, attr)) fail(`duplicate attribute ${attr}`);
      // Attribute-value normalization: literal whitespace becomes a space, references survive.
      element.attributes[attr] = decode(raw.replace(/[\t\n\r]/g, " "), pos);
      pos = end + 1;
    }
    for (;;) {
      if (pos >= source.length) fail(`unclosed element ${element.name}`);
      if (startsWith("</")) {
        pos += 2;
        const name = readName();
        if (name !== element.name) fail(`</${name}> closes <${element.name}>`);
        skipSpace();
        if (source[pos] !== ">") fail("expected > to end a closing tag");
        pos++;
        return element;
      }
      if (startsWith("<![CDATA[")) {
        const end = source.indexOf("]]>", pos);
        if (end < 0) fail("unterminated CDATA section");
        element.text += source.slice(pos + 9, end);
        pos = end + 3;
      } else if (startsWith("<!--")) skipComment();
      else if (startsWith("<?")) skipPi();
      else if (startsWith("<")) element.children.push(parseElement());
      else {
        const next = source.indexOf("<", pos);
        const raw = source.slice(pos, next < 0 ? source.length : next);
        if (raw.includes("]]>")) fail("]]> in character data");
        element.text += decode(raw.replace(/\r\n?/g, "\n"), pos);
        pos += raw.length;
      }
    }
  };

  if (source.charCodeAt(0) === 0xfeff) pos = 1;
  if (startsWith("<?xml")) {
    const end = source.indexOf("?>", pos);
    if (end < 0) fail("unterminated XML declaration");
    if (
      !/^<\?xml\s+version\s*=\s*(["'])1\.[0-9]+\1(\s+encoding\s*=\s*(["'])[A-Za-z][A-Za-z0-9._-]*\3)?(\s+standalone\s*=\s*(["'])(yes|no)\5)?\s*$/.test(
        source.slice(pos, end),
      )
    ) {
      fail("malformed XML declaration");
    }
    pos = end + 2;
  }
  skipMisc();
  if (startsWith("<!DOCTYPE")) fail("DOCTYPE is not supported");
  const root = parseElement();
  skipMisc();
  if (pos !== source.length) fail("content after the root element");
  return root;
}

/** Every descendant element (depth first) with this name. */
export function findAll(root: XmlElement, name: string): XmlElement[] {
  const found: XmlElement[] = [];
  const visit = (e: XmlElement) => {
    if (e.name === name) found.push(e);
    e.children.forEach(visit);
  };
  visit(root);
  return found;
}
