// A command's flags, each declared once: how parseArgs takes it, what its text becomes (checked, typed)
// and how help shows it. Help and parsing both come from the one table, and every command turns its
// argv into a typed config this way before it reads or opens anything. What a command needs of its
// flags (one required, two exclusive, one from the environment) is said in the table too, as oclif's
// flags say it, and checked here.
import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "../errors.js";
import { nearest } from "../manifest/suggest.js";
import { visible } from "../text/escape.js";
import { wholeNumber } from "../whole-number.js";
import { HelpRequested, commandHelp, type FlagHelp } from "./help.js";
import { io } from "./io.js";

/** One flag: its help (kind, placeholder, text) and how its text is read. */
export interface Flag<T> extends FlagHelp {
  /**
   * The flag's value from what was given (undefined when absent; true when a boolean flag is
   * given); a mistake is a UsageError naming `--name`.
   */
  read(given: string | boolean | undefined, name: string): T;
  /** Absent (and none of `unless` given), the command cannot run: `message` says what it needs. */
  required?: { message: string; unless?: readonly string[] };
  /** The flags this one does not go with, each with the message saying so. */
  excludes?: Readonly<Record<string, string>>;
  /** Absent from argv, the value of this environment variable, read as if given. */
  env?: string;
}

export type Flags = Record<string, Flag<unknown>>;

/** The typed config a flag table reads argv into: one key per flag, a required one always set. */
export type Config<F extends Flags> = {
  [K in keyof F]: F[K] extends { required: { message: string; unless?: undefined } }
    ? NonNullable<ReturnType<F[K]["read"]>>
    : ReturnType<F[K]["read"]>;
};

/** A flag taking text that `check` reads into T; undefined when absent. */
export function checkedFlag<T>(
  value: string,
  help: string,
  check: (given: string, name: string) => T,
): Flag<T | undefined> {
  return {
    type: "string",
    value,
    help,
    read: (given, name) => (given === undefined ? undefined : check(given as string, name)),
  };
}

/** A flag taking text, undefined when absent. */
export const textFlag = (value: string, help: string) => checkedFlag(value, help, (given) => given);

/** A switch: true when given. */
export function switchFlag(help: string): Flag<boolean> {
  return { type: "boolean", help, read: (given) => given === true };
}

/**
 * A whole number (wholeNumber: decimal digits only) of at least `min` (default 1), `fallback` when
 * absent; anything else is a usage error naming the flag and what it takes (`hint`, by default
 * "of at least <min>").
 */
export function wholeFlag<F extends number | undefined>(
  value: string,
  help: string,
  fallback: F,
  { min = 1, hint = `of at least ${min}` }: { min?: number; hint?: string } = {},
): Flag<number | F> {
  return {
    type: "string",
    value,
    help,
    read: (given, name) => {
      if (given === undefined) return fallback;
      const number = wholeNumber(given as string, min);
      if (number === undefined)
        throw new UsageError(
          `--${name} takes a whole number ${hint}, not "${visible(given as string)}"`,
        );
      return number;
    },
  };
}

/** One of `choices`, `fallback` when absent. */
export function choiceFlag<const C extends readonly string[]>(
  choices: C,
  value: string,
  help: string,
  fallback: C[number],
): Flag<C[number]> {
  const said = `${choices.slice(0, -1).join(", ")} or ${choices.at(-1)}`;
  return {
    type: "string",
    value,
    help,
    read: (given, name) => {
      const chosen = choices.find((choice) => choice === (given ?? fallback));
      if (chosen === undefined)
        throw new UsageError(`--${name} takes ${said}, not "${visible(given as string)}"`);
      return chosen;
    },
  };
}

/** The same flag with what a command says it means for it (and its placeholder). */
export function saying<T>(flag: Flag<T>, help: string, value = flag.value): Flag<T> {
  return { ...flag, help, ...(value !== undefined && { value }) };
}

type Options = NonNullable<ParseArgsConfig["options"]>;

const HELP = {
  type: "boolean",
  short: "h",
  help: "show this help",
  read: (given) => given === true,
} satisfies Flag<boolean>;

/**
 * `--concurrency -1` as `--concurrency=-1`: parseArgs would call the value an ambiguous option,
 * while it is the flag's own check that can say what the flag takes. No option starts with a digit.
 */
function joinDashedValues(argv: readonly string[], flags: Flags): string[] {
  const end = argv.indexOf("--");
  const given = end === -1 ? argv : argv.slice(0, end);
  const joined: string[] = [];
  for (let i = 0; i < given.length; i++) {
    const name = given[i]!.startsWith("--") ? given[i]!.slice(2) : "";
    const next = given[i + 1];
    if (flags[name]?.type === "string" && next !== undefined && /^-\d/.test(next))
      joined.push(`${given[i]}=${given[++i]}`);
    else joined.push(given[i]!);
  }
  return end === -1 ? joined : [...joined, ...argv.slice(end)];
}

/** Tokenizes with parseArgs (strict); its errors become usage errors suggesting the nearest flag. */
function tokenize(command: string, argv: string[], flags: Flags, positionals: boolean) {
  const options: Options = Object.fromEntries(
    Object.entries(flags).map(([name, { type, short }]) => [
      name,
      short ? { type, short } : { type },
    ]),
  );
  try {
    return parseArgs({
      args: joinDashedValues(argv, flags),
      options,
      strict: true,
      allowPositionals: positionals,
    });
  } catch (error) {
    const unknown = /^Unknown option '(-{1,2}[^']*)'/.exec((error as Error).message)?.[1];
    const suggestion =
      unknown &&
      nearest(
        unknown.replace(/^-+/, ""),
        Object.keys(flags).filter((name) => name !== "help"),
      );
    const message = unknown
      ? `unknown option ${unknown}${suggestion ? ` (did you mean --${suggestion}?)` : ""}`
      : (error as Error).message.replace(
          /\. To specify a positional argument starting with a '-'.*$/,
          "",
        );
    throw new UsageError(`${command}: ${message}`, command);
  }
}

/**
 * A command's argv as its typed config (each flag read and checked), with -h/--help
 * (HelpRequested, the help generated from `flags`) and usage errors naming the command.
 */
export function parseFlags<F extends Flags>(
  command: string,
  argv: string[],
  flags: F,
  { positionals = false }: { positionals?: boolean } = {},
): { config: Config<F>; positionals: string[] } {
  const all: Flags = { ...flags, help: HELP };
  if (argv.includes("--help") || argv.includes("-h"))
    throw new HelpRequested(commandHelp(command, all));
  const parsed = tokenize(command, argv, all, positionals);
  const values = givenValues(parsed.values, flags);
  const config = Object.fromEntries(
    Object.entries(flags).map(([name, flag]) => [name, flag.read(values[name], name)]),
  ) as Config<F>;
  checkRelations(flags, values);
  return { config, positionals: parsed.positionals };
}

/** What each flag was given: on the command line, else in its environment variable (`env`). */
function givenValues(parsed: Record<string, unknown>, flags: Flags) {
  const env = io().env;
  const given = parsed as Record<string, string | boolean | undefined>;
  return Object.fromEntries(
    Object.entries(flags).map(([name, flag]) => [
      name,
      given[name] ?? (flag.env === undefined || env[flag.env] === "" ? undefined : env[flag.env]),
    ]),
  );
}

/** The table's `required` and `excludes`, over what was given, before any flag is acted on. */
function checkRelations(flags: Flags, given: Record<string, string | boolean | undefined>): void {
  const isGiven = (name: string) => given[name] !== undefined;
  // An empty value is no value for what a command needs.
  const isSet = (name: string) => isGiven(name) && given[name] !== "";
  for (const [name, flag] of Object.entries(flags)) {
    const { required, excludes = {} } = flag;
    if (required && !isSet(name) && !required.unless?.some(isSet))
      throw new UsageError(required.message);
    if (!isGiven(name)) continue;
    for (const [other, message] of Object.entries(excludes))
      if (Object.hasOwn(flags, other) && isGiven(other)) throw new UsageError(message);
  }
}
