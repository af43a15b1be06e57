import * as z from "zod";

// Who holds what drifted (the processes and user behind a listening socket), as far as the audit
// user may read it: shared by the domains that know it and the report (schema.ts re-uses it).

/**
 * One process holding the item, or, without `pid`, a holder whose process the audit user may not
 * read (another user's, without `become: sudo`): its user is known, its process is not.
 */
export const Holder = z.object({
  pid: z.number().int().positive().optional(),
  /** The process's name (its `comm`, at most 15 bytes), as the host sent it: host text. */
  name: z.string().optional(),
  uid: z.number().int().nonnegative(),
  /** The uid's name on the host (host text); absent where the host names no such uid. */
  user: z.string().optional(),
});
export type Holder = z.infer<typeof Holder>;
