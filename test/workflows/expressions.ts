// The subset of GitHub Actions expressions our workflows use: contexts with property access,
// literals, ! == != < > && ||, parentheses, and the functions below. Anything else is an error,
// so a workflow cannot quietly depend on something this evaluator does not do.

export type Value = null | boolean | number | string | Value[] | { [key: string]: Value };
export type Contexts = Record<string, Value>;
export interface Status {
  /** success() at this point: every earlier step (or every needed job) succeeded. */
  success: boolean;
}

type Token = { type: "op" | "str" | "num" | "ident"; text: string };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'") {
      let text = "";
      i++;
      for (;;) {
        if (i >= source.length) throw new Error(`unterminated string in ${source}`);
        if (source[i] === "'" && source[i + 1] === "'") {
          text += "'";
          i += 2;
        } else if (source[i] === "'") {
          i++;
          break;
        } else text += source[i++];
      }
      tokens.push({ type: "str", text });
    } else if (/[0-9]/.test(c)) {
      const m = /^[0-9]+(\.[0-9]+)?/.exec(source.slice(i))!;
      tokens.push({ type: "num", text: m[0] });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(source.slice(i))!;
      tokens.push({ type: "ident", text: m[0] });
      i += m[0].length;
    } else {
      const op = ["==", "!=", "<=", ">=", "&&", "||"].find((o) => source.startsWith(o, i)) ?? c;
      if (
        !["==", "!=", "<=", ">=", "&&", "||", "!", "<", ">", "(", ")", "[", "]", ".", ","].includes(
          op,
        )
      )
        throw new Error(`unsupported character "${c}" in ${source}`);
      tokens.push({ type: "op", text: op });
      i += op.length;
    }
  }
  return tokens;
}

export function truthy(value: Value | undefined): boolean {
  return !(value === null || value === undefined || value === false || value === 0 || value === "");
}

function toNumber(value: Value): number {
  if (value === null) return 0;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number") return value;
  if (typeof value === "string") return value.trim() === "" ? 0 : Number(value);
  return NaN;
}

// GitHub compares strings case-insensitively and coerces mismatched types to numbers, null to 0
// (`null == ''` holds: an unset secret or output equals '').
function equal(a: Value, b: Value): boolean {
  if (typeof a === "string" && typeof b === "string") return a.toLowerCase() === b.toLowerCase();
  if (a === null && b === null) return true;
  const composite = (v: Value) => v !== null && typeof v === "object";
  if (composite(a) || composite(b)) return a === b;
  if (typeof a === typeof b) return a === b;
  return toNumber(a) === toNumber(b);
}

export function toText(value: Value | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return Array.isArray(value) ? "Array" : "Object";
  return String(value);
}

export function evaluate(
  source: string,
  contexts: Contexts,
  status: Status = { success: true },
): Value {
  const tokens = tokenize(source);
  let pos = 0;
  const peek = () => tokens[pos];
  const take = (text?: string): Token => {
    const token = tokens[pos++];
    if (!token || (text !== undefined && token.text !== text))
      throw new Error(`expected ${text ?? "more"} in ${source}`);
    return token;
  };
  const isOp = (text: string) => peek()?.type === "op" && peek()!.text === text;

  const FUNCTIONS: Record<string, (args: Value[]) => Value> = {
    fromjson: ([text]) => JSON.parse(toText(text ?? null)) as Value,
    tojson: ([value]) => JSON.stringify(value ?? null, null, 2),
    startswith: ([a, b]) =>
      toText(a ?? null)
        .toLowerCase()
        .startsWith(toText(b ?? null).toLowerCase()),
    endswith: ([a, b]) =>
      toText(a ?? null)
        .toLowerCase()
        .endsWith(toText(b ?? null).toLowerCase()),
    contains: ([a, b]) =>
      Array.isArray(a)
        ? a.some((x) => equal(x, b ?? null))
        : toText(a ?? null)
            .toLowerCase()
            .includes(toText(b ?? null).toLowerCase()),
    // `{0}`…`{n}` replaced by the arguments after the first; `{{` and `}}` are braces.
    format: ([template, ...args]) =>
      toText(template ?? null).replace(/\{\{|\}\}|\{(\d+)\}/g, (all: string, index?: string) =>
        index === undefined ? all[0]! : toText(args[Number(index)] ?? null),
      ),
    success: () => status.success,
    failure: () => !status.success,
    always: () => true,
    cancelled: () => false,
  };

  const primary = (): Value => {
    const token = take();
    if (token.type === "str") return token.text;
    if (token.type === "num") return Number(token.text);
    if (token.type === "op" && token.text === "(") {
      const value = or();
      take(")");
      return value;
    }
    if (token.type !== "ident") throw new Error(`unexpected "${token.text}" in ${source}`);
    if (token.text === "true") return true;
    if (token.text === "false") return false;
    if (token.text === "null") return null;
    if (isOp("(")) {
      take("(");
      const args: Value[] = [];
      while (!isOp(")")) {
        args.push(or());
        if (isOp(",")) take(",");
      }
      take(")");
      const fn = FUNCTIONS[token.text.toLowerCase()];
      if (!fn) throw new Error(`unsupported function ${token.text}() in ${source}`);
      return fn(args);
    }
    if (!(token.text in contexts)) throw new Error(`unknown context "${token.text}" in ${source}`);
    return contexts[token.text]!;
  };
  const postfix = (): Value => {
    let value = primary();
    for (;;) {
      let key: string;
      if (isOp(".")) {
        take(".");
        key = take().text;
      } else if (isOp("[")) {
        take("[");
        key = toText(or());
        take("]");
      } else return value;
      value =
        value !== null && typeof value === "object" && !Array.isArray(value)
          ? (value[key] ?? null)
          : Array.isArray(value)
            ? (value[Number(key)] ?? null)
            : null;
    }
  };
  const unary = (): Value => {
    if (isOp("!")) {
      take("!");
      return !truthy(unary());
    }
    return postfix();
  };
  const compare = (): Value => {
    let left = unary();
    while (["<", "<=", ">", ">="].some(isOp)) {
      const op = take().text;
      const [a, b] = [toNumber(left), toNumber(unary())];
      left = op === "<" ? a < b : op === "<=" ? a <= b : op === ">" ? a > b : a >= b;
    }
    return left;
  };
  const equality = (): Value => {
    let left = compare();
    while (isOp("==") || isOp("!=")) {
      const op = take().text;
      const same = equal(left, compare());
      left = op === "==" ? same : !same;
    }
    return left;
  };
  const and = (): Value => {
    let left = equality();
    while (isOp("&&")) {
      take("&&");
      const right = equality();
      left = truthy(left) ? right : left;
    }
    return left;
  };
  function or(): Value {
    let left = and();
    while (isOp("||")) {
      take("||");
      const right = and();
      left = truthy(left) ? left : right;
    }
    return left;
  }
  const value = or();
  if (pos !== tokens.length) throw new Error(`unexpected "${tokens[pos]!.text}" in ${source}`);
  return value;
}

const EMBEDDED = /\$\{\{(.*?)\}\}/gs;

/**
 * A workflow value: a lone `${{ x }}` keeps x's type (a matrix list), text around it makes a
 * string.
 */
export function interpolate(text: string, contexts: Contexts, status?: Status): Value {
  const lone = /^\$\{\{(.*?)\}\}$/s.exec(text.trim());
  if (lone && !lone[1]!.includes("}}")) return evaluate(lone[1]!, contexts, status);
  return text.replace(EMBEDDED, (_, expr: string) => toText(evaluate(expr, contexts, status)));
}

/**
 * An `if:` condition: `${{ }}` optional, and success() implied unless a status function is named.
 */
export function condition(
  text: string | boolean | undefined,
  contexts: Contexts,
  status: Status,
): boolean {
  if (text === undefined) return status.success;
  if (typeof text === "boolean") return text && status.success;
  const source = /^\s*\$\{\{(.*)\}\}\s*$/s.exec(text)?.[1] ?? text;
  const value = truthy(evaluate(source, contexts, status));
  return /\b(success|failure|always|cancelled)\s*\(/.test(source) ? value : value && status.success;
}
