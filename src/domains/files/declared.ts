// One file's declaration: the schema both the domain (index.ts) and the contents compare read.
import * as z from "zod";
import { normalizeMode } from "./parse.js";

const FilePath = z
  .string()
  .startsWith("/", "must be an absolute path")
  .refine((p) => !/\p{Cc}/u.test(p), "must not hold control characters (newlines, tabs)")
  .refine((p) => !p.split("/").includes(".."), "must not hold `..` segments");
// YAML 1.2 reads an unquoted 0644 as the decimal number 644, so a mode must arrive as a string.
const FileMode = z
  .string({
    error: (issue) =>
      typeof issue.input === "number"
        ? `quote the mode as an octal string, like mode: "0644" (YAML reads ${String(issue.input)} unquoted as a decimal number)`
        : `an octal mode string like "0644"`,
  })
  .regex(/^[0-7]{3,4}$/, `an octal mode like "0644" or "644"`)
  .transform(normalizeMode);
const Account = z
  .string()
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*\$?$/, "a user or group name, or a numeric id");

export const FileDeclared = z
  .strictObject({
    path: FilePath,
    contents: z.string().optional(),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "64 lower-case hex digits (the output of sha256sum)")
      .optional(),
    mode: FileMode.optional(),
    owner: Account.optional(),
    group: Account.optional(),
    /** Compared by hash only: its contents never leave the host and never appear in a report. */
    secret: z.boolean().optional(),
    /** The file must not exist. */
    absent: z.boolean().optional(),
    /** The path is a symlink to this target (compared as text, never followed). */
    link: z
      .string()
      .min(1, "a symlink target")
      .refine((t) => !t.includes("\0"), "must not hold a NUL byte")
      .optional(),
  })
  .superRefine((file, ctx) => {
    const problem = (message: string) => ctx.addIssue({ code: "custom", message });
    if (file.absent) {
      const attributes = [
        "contents",
        "sha256",
        "mode",
        "owner",
        "group",
        "secret",
        "link",
      ] as const;
      const others = attributes.filter((k) => file[k] !== undefined);
      if (others.length) problem(`a file declared absent has no ${others.join(", ")}`);
    }
    if (file.link !== undefined) {
      const others = (["contents", "sha256", "mode", "secret"] as const).filter(
        (k) => file[k] !== undefined,
      );
      if (others.length) problem(`a symlink (link) has no ${others.join(", ")} of its own`);
    }
    if (file.contents !== undefined && file.sha256 !== undefined)
      problem("declare contents or sha256, not both");
    if (file.secret && file.contents !== undefined) {
      problem("a secret file is declared by its sha256, so its contents stay out of the manifest");
    }
  });
export type FileDeclared = z.infer<typeof FileDeclared>;
