// The disk behind an ssh_config's `Include`: globs as glob(3) expands them (`*`, `?`, `[...]` in
// any path segment, dot files only when the pattern says so, results sorted), files read whole.
import { readdirSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { globMatch, isGlob } from "../../glob.js";
import type { SshConfigSource } from "./ssh-config.js";

/** The files an absolute glob names, segment by segment. */
function expand(pattern: string): string[] {
  let paths = ["/"];
  for (const segment of pattern.split("/").filter(Boolean)) {
    paths = paths.flatMap((dir) => {
      if (!isGlob(segment)) return [path.join(dir, segment)];
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        return [];
      }
      return names
        .filter((n) => (!n.startsWith(".") || segment.startsWith(".")) && globMatch(segment, n))
        .sort()
        .map((n) => path.join(dir, n));
    });
  }
  return paths.filter((p) => {
    try {
      return statSync(p).isFile();
    } catch {
      return false;
    }
  });
}

/** This machine's files, with the user's home as ssh takes it (the password database's). */
export const localSshConfigSource = (home = os.userInfo().homedir): SshConfigSource => ({
  home,
  glob: expand,
  read: (file) => readFileSync(file, "utf8"),
});
