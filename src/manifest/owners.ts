// Owners GitHub can be asked to review: users, and teams of the repository's own organization
// (GitHub reads a team slug in that organization only, so another's team would be someone else).
import { ManifestError } from "../errors.js";
import type { LoadedNode } from "./load.js";
import { sourceOf } from "./merge-layers.js";

/** Each `owners:` entry naming a team of another organization than `org`, once per file line. */
export function foreignTeams(nodes: readonly LoadedNode[], org: string): ManifestError[] {
  const found = new Map<string, ManifestError>();
  for (const node of nodes) {
    const owners = Array.isArray(node.spec.owners) ? node.spec.owners : [];
    owners.forEach((owner, index) => {
      const team = /^@?([^/]+)\/./.exec(owner);
      if (!team || team[1]!.toLowerCase() === org.toLowerCase()) return;
      const { file, line, col } = sourceOf(node, ["owners", index]);
      found.set(
        `${file}:${line}:${col}`,
        new ManifestError(
          `owner "${owner}" is a team of another organization than ${org}: GitHub cannot ask it to review`,
          { file, line, col },
          "name a user, or a team of this repository's organization",
        ),
      );
    });
  }
  return [...found.values()];
}
