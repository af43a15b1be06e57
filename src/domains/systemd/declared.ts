import * as z from "zod";
import { keyedList } from "../domain.js";

// What a manifest declares of a unit, and where on a host its files are.

const UNIT_TYPES = [
  "service",
  "socket",
  "device",
  "mount",
  "automount",
  "swap",
  "target",
  "path",
  "timer",
  "slice",
  "scope",
];
const UnitName = z
  .string()
  .regex(
    new RegExp(`^[A-Za-z0-9:_.\\\\-]+(@[A-Za-z0-9:_.\\\\-]*)?\\.(${UNIT_TYPES.join("|")})$`),
    `a unit name ending in .${UNIT_TYPES.slice(0, 5).join(", .")}, ...`,
  );
// Checked per key here: zod reports a bad record key only as "Invalid key in record".
const Dropins = z.record(z.string(), z.string()).superRefine((dropins, ctx) => {
  for (const name of Object.keys(dropins)) {
    if (!/^[A-Za-z0-9:_.@-]+\.conf$/.test(name)) {
      ctx.addIssue({
        code: "custom",
        message: `${name}: a drop-in file name ending in .conf`,
        path: [name],
      });
    }
  }
});

export const UnitDeclared = z.strictObject({
  name: UnitName,
  enabled: z.boolean().optional(),
  active: z.boolean().optional(),
  /**
   * The unit file, compared with the one in effect (/etc/systemd/system first, then the vendor's).
   */
  contents: z.string().optional(),
  /** The complete set of drop-ins in /etc/systemd/system/<name>.d/: file name -> contents. */
  dropins: Dropins.optional(),
});
export type UnitDeclared = z.infer<typeof UnitDeclared>;

export const SystemdDeclared = keyedList(UnitDeclared, "name");
export type SystemdDeclared = z.infer<typeof SystemdDeclared>;

/**
 * The unit files a unit is read from: its own, and for `foo@bar.service` its template
 * `foo@.service`.
 */
export function unitFileNames(name: string): string[] {
  const m = /^([^@]+@)[^@]+(\.[a-z]+)$/.exec(name);
  return m ? [name, `${m[1]}${m[2]}`] : [name];
}

/** Where the drop-ins of a unit live: every *.conf in it changes the unit. */
export const dropinDir = (name: string) => `/etc/systemd/system/${name}.d`;
