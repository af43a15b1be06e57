// nft's JSON (`nft -j`) back into nft's own words, the form `nft list ruleset` prints a rule in:
// `tcp dport { 80, 443 } accept`, so a manifest declares rules as an operator reads them. Counter
// values are left out (they change with every packet); an expression this does not know is kept
// as its compact JSON, which still compares exactly and round-trips through a snapshot.

type Json = unknown;

const isObject = (value: Json): value is Record<string, Json> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The one key of `{key: body}`, nft's shape for every expression and statement. */
function single(value: Json): [string, Json] | undefined {
  if (!isObject(value)) return undefined;
  const keys = Object.keys(value);
  return keys.length === 1 ? [keys[0]!, value[keys[0]!]] : undefined;
}

// Meta keys nft prints without `meta` (src/meta.c: the "unqualified" ones).
const BARE_META = new Set([
  "iif",
  "oif",
  "iifname",
  "oifname",
  "iiftype",
  "oiftype",
  "mark",
  "priority",
  "skuid",
  "skgid",
  "rtclassid",
  "nftrace",
  "cpu",
  "iifgroup",
  "oifgroup",
  "cgroup",
]);

/** Meta keys whose values are strings nft prints quoted (interface names). */
const QUOTED_META = new Set(["iifname", "oifname", "ibrname", "obrname", "ibriport", "obriport"]);

export const quoted = (text: string): string => `"${text}"`;

/** A value (a constant, a set, a range, a prefix) in nft's words; `quote` for string constants. */
export function value(v: Json, quote = false): string {
  if (typeof v === "string") return quote && !v.startsWith("@") ? quoted(v) : v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return v.map((each) => value(each, quote)).join(",");
  const one = single(v);
  if (one) {
    const [kind, body] = one;
    if (kind === "set" && Array.isArray(body))
      return `{ ${body.map((each) => value(each, quote)).join(", ")} }`;
    if (kind === "set") return `{ ${value(body, quote)} }`;
    if (kind === "range" && Array.isArray(body) && body.length === 2)
      return `${value(body[0], quote)}-${value(body[1], quote)}`;
    if (kind === "prefix" && isObject(body)) return `${value(body.addr)}/${value(body.len)}`;
    if (kind === "concat" && Array.isArray(body))
      return body.map((each) => value(each, quote)).join(" . ");
    if (kind === "elem" && isObject(body)) return element(body, quote);
  }
  return expression(v);
}

function element(body: Record<string, Json>, quote: boolean): string {
  const words = [value(body.val, quote)];
  if (body.timeout !== undefined) words.push(`timeout ${value(body.timeout)}s`);
  if (typeof body.comment === "string") words.push(`comment ${quoted(body.comment)}`);
  return words.join(" ");
}

/** An expression read by a match (`tcp dport`, `ct state`, `iifname`), or its JSON. */
export function expression(e: Json): string {
  const one = single(e);
  if (one) {
    const [kind, body] = one;
    if (kind === "concat" && Array.isArray(body)) return body.map(expression).join(" . ");
    if (isObject(body)) {
      if (kind === "payload" && typeof body.protocol === "string")
        return `${body.protocol} ${value(body.field)}`;
      if (kind === "payload")
        return `@${value(body.base)},${value(body.offset)},${value(body.len)}`;
      if (kind === "meta" && typeof body.key === "string")
        return BARE_META.has(body.key) ? body.key : `meta ${body.key}`;
      if (kind === "ct" && typeof body.key === "string")
        return ["ct", body.dir, body.key].filter((w) => typeof w === "string").join(" ");
      if (kind === "fib" && Array.isArray(body.flags))
        return `fib ${body.flags.map((f) => value(f)).join(" . ")} ${value(body.result)}`;
    }
  }
  if (typeof e === "string" || typeof e === "number") return String(e);
  return JSON.stringify(e);
}

function match(body: Record<string, Json>): string {
  const left = expression(body.left);
  const meta = single(body.left);
  const quote = meta?.[0] === "meta" && isObject(meta[1]) && QUOTED_META.has(String(meta[1].key));
  const right = value(body.right, quote);
  const op = body.op === "==" || body.op === "in" ? "" : `${String(body.op)} `;
  return `${left} ${op}${right}`;
}

function log(body: Json): string {
  if (!isObject(body)) return "log";
  const words = ["log"];
  if (typeof body.prefix === "string") words.push(`prefix ${quoted(body.prefix)}`);
  for (const key of ["group", "snaplen", "level"] as const)
    if (body[key] !== undefined) words.push(`${key} ${value(body[key])}`);
  return words.join(" ");
}

function nat(kind: string, body: Json): string {
  if (!isObject(body)) return kind;
  const words = [kind];
  if (body.family !== undefined) words.push(value(body.family));
  if (body.addr !== undefined) {
    const port = body.port === undefined ? "" : `:${value(body.port)}`;
    words.push(`to ${value(body.addr)}${port}`);
  } else if (body.port !== undefined) words.push(`to :${value(body.port)}`);
  return words.join(" ");
}

function limit(body: Json): string {
  if (!isObject(body)) return "limit";
  const over = body.inv === true ? "over " : "";
  const unit =
    body.rate_unit === "bytes" || body.rate_unit === undefined ? "" : ` ${value(body.rate_unit)}`;
  const burst = body.burst ? ` burst ${value(body.burst)} packets` : "";
  return `limit rate ${over}${value(body.rate)}${unit}/${value(body.per)}${burst}`;
}

/** One statement of a rule in nft's words. */
export function statement(s: Json): string {
  const one = single(s);
  if (!one) return JSON.stringify(s);
  const [kind, body] = one;
  switch (kind) {
    case "match":
      return isObject(body) ? match(body) : JSON.stringify(s);
    case "accept":
    case "drop":
    case "continue":
    case "return":
    case "masquerade":
    case "notrack":
      return body === null ? kind : nat(kind, body);
    case "jump":
    case "goto":
      return isObject(body) ? `${kind} ${value(body.target)}` : kind;
    case "xt":
      // A match or target iptables-nft made and nft cannot show: its kind and name, as nft 1.1 does.
      return isObject(body) ? `xt ${value(body.type)} ${quoted(String(body.name))}` : "xt";
    case "counter":
      return "counter";
    case "log":
      return log(body);
    case "reject":
      return isObject(body)
        ? [
            "reject",
            body.type !== undefined && `with ${value(body.type)}`,
            body.expr !== undefined && value(body.expr),
          ]
            .filter(Boolean)
            .join(" ")
        : "reject";
    case "snat":
    case "dnat":
    case "redirect":
      return nat(kind, body);
    case "limit":
      return limit(body);
    case "mangle":
      return isObject(body)
        ? `${expression(body.key)} set ${value(body.value)}`
        : JSON.stringify(s);
    default:
      return JSON.stringify(s);
  }
}

/** A rule's statements and comment, as one line of `nft list ruleset`. */
export function ruleWords(expr: Json, comment: Json): string {
  const words = Array.isArray(expr) ? expr.map(statement) : [JSON.stringify(expr)];
  if (typeof comment === "string") words.push(`comment ${quoted(comment)}`);
  return words.join(" ");
}

/** A base chain's head: `type filter hook input priority 0`. */
export function hookWords(chain: Record<string, Json>): string | undefined {
  if (chain.hook === undefined) return undefined;
  const words = [`type ${value(chain.type)}`, `hook ${value(chain.hook)}`];
  if (chain.dev !== undefined) words.push(`device ${value(chain.dev, true)}`);
  words.push(`priority ${value(chain.prio)}`);
  return words.join(" ");
}
