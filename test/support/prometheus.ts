// A strict parser for the Prometheus text exposition format (version 0.0.4), as the
// node_exporter textfile collector reads it. Throws on anything a scrape would reject or
// that the format leaves ambiguous: bad names, bad escapes, repeated HELP/TYPE, a TYPE after
// its samples, a family split into separate groups, duplicate series.

export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  timestamp?: number;
}

export interface MetricFamily {
  name: string;
  help?: string;
  type: MetricType;
  samples: Sample[];
}

export class ExpositionError extends Error {
  override readonly name = "ExpositionError";
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
  }
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set<MetricType>(["counter", "gauge", "histogram", "summary", "untyped"]);
const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const SUFFIXES: Partial<Record<MetricType, readonly string[]>> = {
  histogram: ["_bucket", "_sum", "_count"],
  summary: ["_sum", "_count", ""],
};

interface FamilyState extends MetricFamily {
  typeSeen: boolean;
  series: Set<string>;
}

export function parseExposition(text: string): MetricFamily[] {
  if (text !== "" && !text.endsWith("\n"))
    throw new ExpositionError(text.split("\n").length, "the last line must end with a newline");
  const families = new Map<string, FamilyState>();
  let current: FamilyState | undefined;

  const enter = (name: string, lineNo: number): FamilyState => {
    let f = families.get(name);
    if (f && f !== current)
      throw new ExpositionError(lineNo, `lines for ${name} are not one contiguous group`);
    if (!f) {
      f = { name, type: "untyped", samples: [], typeSeen: false, series: new Set() };
      families.set(name, f);
    }
    current = f;
    return f;
  };

  const lines = text.split("\n").slice(0, -1);
  lines.forEach((raw, index) => {
    const lineNo = index + 1;
    if (raw.includes("\r"))
      throw new ExpositionError(lineNo, "carriage return in line (line endings must be \\n)");
    const line = raw.replace(/^[ \t]+/, "");
    if (line === "") return;
    if (line.startsWith("#")) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(line);
      if (!m) return; // an ordinary comment
      const [, keyword, name, rest = ""] = m as unknown as [
        string,
        "HELP" | "TYPE",
        string,
        string | undefined,
      ];
      if (!METRIC_NAME.test(name))
        throw new ExpositionError(lineNo, `invalid metric name ${JSON.stringify(name)}`);
      const f = enter(name, lineNo);
      if (keyword === "HELP") {
        if (f.help !== undefined) throw new ExpositionError(lineNo, `second HELP line for ${name}`);
        f.help = unescape(rest, ["\\", "n"], lineNo);
      } else {
        const type = rest.trim() as MetricType;
        if (!TYPES.has(type))
          throw new ExpositionError(lineNo, `unknown metric type ${JSON.stringify(rest)}`);
        if (f.typeSeen) throw new ExpositionError(lineNo, `second TYPE line for ${name}`);
        if (f.samples.length > 0)
          throw new ExpositionError(lineNo, `TYPE line for ${name} after its samples`);
        f.type = type;
        f.typeSeen = true;
      }
      return;
    }
    const sample = parseSample(line, lineNo);
    const f = current && belongsTo(sample.name, current) ? current : enter(sample.name, lineNo);
    if (!belongsTo(sample.name, f))
      throw new ExpositionError(
        lineNo,
        `sample ${sample.name} does not belong to ${f.type} ${f.name}`,
      );
    const id = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    if (f.series.has(id))
      throw new ExpositionError(
        lineNo,
        `duplicate series ${sample.name}${JSON.stringify(sample.labels)}`,
      );
    f.series.add(id);
    f.samples.push(sample);
  });
  return [...families.values()].map(({ name, help, type, samples }) => ({
    name,
    ...(help !== undefined ? { help } : {}),
    type,
    samples,
  }));
}

function belongsTo(sampleName: string, f: FamilyState): boolean {
  const suffixes = SUFFIXES[f.type] ?? [""];
  return suffixes.some((s) => sampleName === f.name + s);
}

function parseSample(line: string, lineNo: number): Sample {
  const nameMatch = /^[^\s{]+/.exec(line);
  const name = nameMatch?.[0] ?? "";
  if (!METRIC_NAME.test(name))
    throw new ExpositionError(lineNo, `invalid metric name ${JSON.stringify(name)}`);
  let pos = name.length;
  const labels: Record<string, string> = {};
  if (line[pos] === "{") {
    pos++;
    const skipBlanks = () => {
      while (line[pos] === " " || line[pos] === "\t") pos++;
    };
    for (;;) {
      skipBlanks();
      if (line[pos] === "}") break;
      const labelMatch = /^[^=\s}]+/.exec(line.slice(pos));
      const label = labelMatch?.[0] ?? "";
      if (!LABEL_NAME.test(label))
        throw new ExpositionError(lineNo, `invalid label name ${JSON.stringify(label)}`);
      if (label.startsWith("__"))
        throw new ExpositionError(lineNo, `label name ${label} is reserved`);
      if (Object.hasOwn(labels, label))
        throw new ExpositionError(lineNo, `duplicate label ${label}`);
      pos += label.length;
      skipBlanks();
      if (line[pos] !== "=") throw new ExpositionError(lineNo, `expected = after label ${label}`);
      pos++;
      skipBlanks();
      if (line[pos] !== '"')
        throw new ExpositionError(lineNo, `expected " to open the value of ${label}`);
      const end = closingQuote(line, pos + 1);
      if (end < 0) throw new ExpositionError(lineNo, `unterminated value for label ${label}`);
      labels[label] = unescape(line.slice(pos + 1, end), ["\\", '"', "n"], lineNo);
      pos = end + 1;
      skipBlanks();
      if (line[pos] === ",") pos++;
      else if (line[pos] !== "}")
        throw new ExpositionError(lineNo, `expected , or } after label ${label}`);
    }
    pos++;
  }
  if (line[pos] !== " " && line[pos] !== "\t")
    throw new ExpositionError(lineNo, "expected a blank before the value");
  const fields = line
    .slice(pos)
    .trim()
    .split(/[ \t]+/);
  if (fields.length > 2 || fields[0] === "")
    throw new ExpositionError(lineNo, "expected a value and an optional timestamp");
  const value = parseValue(fields[0]!, lineNo);
  const sample: Sample = { name, labels, value };
  if (fields[1] !== undefined) {
    if (!/^-?\d+$/.test(fields[1]))
      throw new ExpositionError(lineNo, `invalid timestamp ${JSON.stringify(fields[1])}`);
    sample.timestamp = Number(fields[1]);
  }
  return sample;
}

function closingQuote(line: string, from: number): number {
  for (let i = from; i < line.length; i++) {
    if (line[i] === "\\") i++;
    else if (line[i] === '"') return i;
  }
  return -1;
}

function unescape(text: string, allowed: readonly string[], lineNo: number): string {
  return text.replace(/\\(.?)/g, (_, c: string) => {
    if (!allowed.includes(c)) throw new ExpositionError(lineNo, `invalid escape sequence \\${c}`);
    return c === "n" ? "\n" : c;
  });
}

function parseValue(text: string, lineNo: number): number {
  if (text === "NaN") return NaN;
  if (/^[+]?Inf$/.test(text)) return Infinity;
  if (text === "-Inf") return -Infinity;
  if (!FLOAT.test(text)) throw new ExpositionError(lineNo, `invalid value ${JSON.stringify(text)}`);
  return Number(text);
}

/** The value of the one sample with exactly these labels, or undefined. */
export function sampleValue(
  families: readonly MetricFamily[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
  for (const f of families) {
    for (const s of f.samples) {
      if (
        s.name === name &&
        JSON.stringify(Object.entries(s.labels).sort(([a], [b]) => (a < b ? -1 : 1))) === want
      )
        return s.value;
    }
  }
  return undefined;
}
