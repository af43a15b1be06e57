// Git plumbing over one bare repository: the GitHub double keeps no branch or commit state of its
// own, so whatever a test pushes with git is what the API shows, and the reverse.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";

export interface GitIdentity {
  name: string;
  email: string;
  /** ISO 8601; now when absent. */
  date?: string;
}

export interface CommitInfo {
  sha: string;
  tree: string;
  parents: string[];
  author: Required<GitIdentity>;
  committer: Required<GitIdentity>;
  message: string;
}

export interface TreeEntry {
  mode: string;
  type: "blob" | "tree" | "commit";
  sha: string;
  path: string;
  size?: number;
}

export interface TreeChange {
  path: string;
  mode?: string;
  type?: "blob" | "tree" | "commit";
  /** null deletes the path. */
  sha?: string | null;
  content?: string;
}

export interface FileChange {
  status: "added" | "removed" | "modified" | "renamed" | "copied" | "changed" | "unchanged";
  filename: string;
  previousFilename?: string;
  additions: number;
  deletions: number;
  sha: string;
  patch?: string;
}

/**
 * A git command that failed for a reason the API reports as a client error (bad sha, ref clash).
 */
export class GitRefusal extends Error {
  override readonly name = "GitRefusal";
}

const SHA = /^[0-9a-f]{40}$/;

interface GitOptions {
  input?: string | Buffer;
  env?: Record<string, string>;
}

export class BareRepo {
  constructor(readonly path: string) {}

  /**
   * git in this repository, never rejecting: its exit code and output as text. Through Node's
   * execFile: the double runs git for most requests, and execa took two to three times the CPU
   * of this process per run.
   */
  private run(
    args: string[],
    options: GitOptions = {},
  ): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = execFile(
        "git",
        args,
        { env: { ...process.env, GIT_DIR: this.path, ...options.env }, maxBuffer: Infinity },
        (error, stdout, stderr) => {
          const exitCode = error ? (typeof error.code === "number" ? error.code : -1) : 0;
          resolve({ exitCode, stdout, stderr });
        },
      );
      // A git that fails before reading its input closes the pipe: its exit code tells.
      child.stdin?.on("error", () => undefined);
      child.stdin?.end(options.input);
    });
  }

  async git(args: string[], options: GitOptions = {}): Promise<string> {
    const result = await this.run(args, options);
    if (result.exitCode !== 0)
      throw new GitRefusal(`git ${args[0]}: ${result.stderr.trim() || `exit ${result.exitCode}`}`);
    return result.stdout;
  }

  /** The object a name resolves to (`refs/heads/x`, a sha, `sha^{tree}`), or undefined. */
  async resolve(name: string): Promise<string | undefined> {
    const result = await this.run(["rev-parse", "--verify", "--quiet", `${name}`]);
    const sha = result.stdout.trim();
    return result.exitCode === 0 && SHA.test(sha) ? sha : undefined;
  }

  async objectType(sha: string): Promise<string | undefined> {
    if (!/^[0-9a-f]{4,40}$/.test(sha)) return undefined;
    const result = await this.run(["cat-file", "-t", sha]);
    return result.exitCode === 0 ? result.stdout.trim() : undefined;
  }

  /** An object's bytes if it is of `type` (not peeled to it): one git process for both. */
  private async objectOf(sha: string, type: string): Promise<Buffer | undefined> {
    const result = await execa("git", ["cat-file", "--batch"], {
      env: { GIT_DIR: this.path },
      input: `${sha}\n`,
      encoding: "buffer",
      reject: false,
    });
    const out = Buffer.from(result.stdout);
    // "<sha> <type> <size>\n<contents>\n", or "<name> missing\n".
    const newline = out.indexOf(0x0a);
    const [, actual, size] = out.subarray(0, newline).toString().split(" ");
    if (result.exitCode !== 0 || actual !== type) return undefined;
    return out.subarray(newline + 1, newline + 1 + Number(size));
  }

  async branchSha(branch: string): Promise<string | undefined> {
    return this.resolve(`refs/heads/${branch}^{commit}`);
  }

  /** Every branch's commit, by branch name: one git process however many branches there are. */
  async branchShas(): Promise<Map<string, string>> {
    const listed = await this.git([
      "for-each-ref",
      "--format=%(refname:lstrip=2) %(*objectname) %(objectname)",
      "refs/heads",
    ]);
    const shas = new Map<string, string>();
    for (const line of listed.split("\n").filter(Boolean)) {
      // A tag object's commit is its peeled sha, printed first; a commit's peeled field is empty.
      const [name, peeled, sha] = line.split(" ");
      shas.set(name!, peeled || sha!);
    }
    return shas;
  }

  async commit(sha: string): Promise<CommitInfo | undefined> {
    const bytes = SHA.test(sha) ? await this.objectOf(sha, "commit") : undefined;
    if (!bytes) return undefined;
    const raw = bytes.toString("utf8");
    const split = raw.indexOf("\n\n");
    const header = raw.slice(0, split).split("\n");
    const message = raw.slice(split + 2);
    const info: CommitInfo = {
      sha,
      tree: "",
      parents: [],
      author: blankIdentity(),
      committer: blankIdentity(),
      message,
    };
    for (const line of header) {
      const space = line.indexOf(" ");
      const [key, value] = [line.slice(0, space), line.slice(space + 1)];
      if (key === "tree") info.tree = value;
      else if (key === "parent") info.parents.push(value);
      else if (key === "author") info.author = parseIdentity(value);
      else if (key === "committer") info.committer = parseIdentity(value);
    }
    return info;
  }

  /** Entries of a tree (or a commit's tree); recursive lists blobs and the trees above them. */
  async tree(
    treeish: string,
    recursive: boolean,
  ): Promise<{ sha: string; entries: TreeEntry[] } | undefined> {
    // `rev:path` takes everything after the colon as the path, so it cannot carry a ^{tree} suffix.
    const sha = await this.resolve(treeish.includes(":") ? treeish : `${treeish}^{tree}`);
    if (!sha || (await this.objectType(sha)) !== "tree") return undefined;
    const out = await this.git(["ls-tree", "-l", "-z", ...(recursive ? ["-r", "-t"] : []), sha]);
    const entries = out
      .split("\0")
      .filter(Boolean)
      .map((record): TreeEntry => {
        const tab = record.indexOf("\t");
        const [mode, type, objectSha, size] = record.slice(0, tab).split(/\s+/) as [
          string,
          TreeEntry["type"],
          string,
          string,
        ];
        const entry: TreeEntry = { mode, type, sha: objectSha, path: record.slice(tab + 1) };
        if (type === "blob") entry.size = Number(size);
        return entry;
      });
    return { sha, entries };
  }

  async blob(sha: string): Promise<Buffer | undefined> {
    return /^[0-9a-f]{4,40}$/.test(sha) ? this.objectOf(sha, "blob") : undefined;
  }

  async writeBlob(content: Buffer): Promise<string> {
    return (await this.git(["hash-object", "-w", "--stdin"], { input: content })).trim();
  }

  /** Builds a tree from changes applied to base (or to nothing), as POST /git/trees does. */
  async writeTree(changes: TreeChange[], base?: string): Promise<string> {
    const scratch = await mkdtemp(join(tmpdir(), "qm-double-index-"));
    const env = { GIT_INDEX_FILE: join(scratch, "index") };
    try {
      if (base) await this.git(["read-tree", base], { env });
      else await this.git(["read-tree", "--empty"], { env });
      for (const change of changes) {
        if (change.sha === null) {
          await this.git(
            ["rm", "--cached", "-r", "-f", "--quiet", "--ignore-unmatch", "--", change.path],
            { env },
          );
          continue;
        }
        const sha =
          change.content !== undefined
            ? await this.writeBlob(Buffer.from(change.content, "utf8"))
            : change.sha;
        if (!sha) throw new GitRefusal(`tree entry ${change.path} has neither sha nor content`);
        const type = change.type ?? "blob";
        // A blob just written from content needs no look-up.
        const actual = change.content !== undefined ? "blob" : await this.objectType(sha);
        if (type !== "commit" && actual !== type)
          throw new GitRefusal(`tree.sha ${sha} is not a valid ${type}`);
        await this.git(
          ["rm", "--cached", "-r", "-f", "--quiet", "--ignore-unmatch", "--", change.path],
          { env },
        );
        if (type === "tree")
          await this.git(["read-tree", `--prefix=${change.path}/`, sha], { env });
        else
          await this.git(
            [
              "update-index",
              "--add",
              "--cacheinfo",
              `${change.mode ?? "100644"},${sha},${change.path}`,
            ],
            { env },
          );
      }
      return (await this.git(["write-tree"], { env })).trim();
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  async writeCommit(
    tree: string,
    parents: string[],
    message: string,
    author: GitIdentity,
    committer: GitIdentity,
  ): Promise<string> {
    const env: Record<string, string> = {
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_COMMITTER_NAME: committer.name,
      GIT_COMMITTER_EMAIL: committer.email,
    };
    if (author.date) env.GIT_AUTHOR_DATE = author.date;
    if (committer.date) env.GIT_COMMITTER_DATE = committer.date;
    const args = ["commit-tree", tree, ...parents.flatMap((p) => ["-p", p])];
    // The message goes through stdin verbatim: `-m` would reformat it.
    return (await this.git([...args, "-F", "-"], { env, input: message })).trim();
  }

  /** Moves or creates a ref; with `expected`, only if it still points there (compare-and-swap). */
  async updateRef(ref: string, sha: string, expected?: string): Promise<void> {
    await this.git(["update-ref", ref, sha, ...(expected ? [expected] : [])]);
  }

  async createRef(ref: string, sha: string): Promise<void> {
    // The all-zero old value makes update-ref refuse a ref that already exists.
    await this.git(["update-ref", ref, sha, "0".repeat(40)]);
  }

  async deleteRef(ref: string): Promise<void> {
    await this.git(["update-ref", "-d", ref]);
  }

  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    const result = await this.run(["merge-base", "--is-ancestor", ancestor, descendant]);
    return result.exitCode === 0;
  }

  async mergeBase(a: string, b: string): Promise<string | undefined> {
    const result = await this.run(["merge-base", a, b]);
    return result.exitCode === 0 ? result.stdout.trim() : undefined;
  }

  /** Commits reachable from head but not from base, oldest first. */
  async commitsBetween(base: string, head: string): Promise<string[]> {
    const out = await this.git(["rev-list", "--reverse", "--topo-order", head, `^${base}`]);
    return out.split("\n").filter(Boolean);
  }

  /** The tree a merge of the two commits would have, or undefined when they conflict. */
  async mergedTree(ours: string, theirs: string): Promise<string | undefined> {
    const result = await this.run(["merge-tree", "--write-tree", "--no-messages", ours, theirs]);
    return result.exitCode === 0 ? result.stdout.split("\n")[0]!.trim() : undefined;
  }

  async changedFiles(from: string, to: string): Promise<FileChange[]> {
    const numstat = await this.git(["diff-tree", "-r", "-M", "--numstat", "-z", from, to]);
    const raw = await this.git(["diff-tree", "-r", "-M", "--raw", "-z", from, to]);
    const counts = parseNumstat(numstat);
    const fields = raw.split("\0");
    const changes: FileChange[] = [];
    for (let i = 0; i + 1 < fields.length;) {
      const meta = fields[i++]!;
      if (!meta.startsWith(":")) continue;
      const [, , , newSha, letters] = meta.slice(1).split(" ") as [
        string,
        string,
        string,
        string,
        string,
      ];
      const letter = letters[0]!;
      const first = fields[i++]!;
      const second = letter === "R" || letter === "C" ? fields[i++] : undefined;
      const filename = second ?? first;
      const count = counts.get(filename) ?? { additions: 0, deletions: 0 };
      const status =
        (
          {
            A: "added",
            D: "removed",
            M: "modified",
            R: "renamed",
            C: "copied",
            T: "changed",
          } as const
        )[letter as "A" | "D" | "M" | "R" | "C" | "T"] ?? "changed";
      const change: FileChange = { status, filename, sha: newSha, ...count };
      if (second) change.previousFilename = first;
      change.patch = await this.git([
        "diff",
        "--no-color",
        "-M",
        from,
        to,
        "--",
        ...(second ? [first] : []),
        filename,
      ]).then(
        (diff) => diff.slice(diff.indexOf("@@")),
        () => undefined,
      );
      changes.push(change);
    }
    return changes;
  }
}

function parseNumstat(out: string): Map<string, { additions: number; deletions: number }> {
  const map = new Map<string, { additions: number; deletions: number }>();
  const fields = out.split("\0");
  for (let i = 0; i < fields.length;) {
    const field = fields[i++]!;
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/.exec(field);
    if (!m) continue;
    // A rename prints an empty path, then the old and the new path as their own fields.
    const path = m[3] === "" ? (i++, fields[i++]!) : m[3]!;
    map.set(path, {
      additions: m[1] === "-" ? 0 : Number(m[1]),
      deletions: m[2] === "-" ? 0 : Number(m[2]),
    });
  }
  return map;
}

function blankIdentity(): Required<GitIdentity> {
  return { name: "", email: "", date: new Date(0).toISOString() };
}

/** `Name <email> 1700000000 +0100` as in a commit header. */
function parseIdentity(value: string): Required<GitIdentity> {
  const m = /^(.*) <([^>]*)> (\d+) ([+-]\d{4})$/.exec(value);
  if (!m) return blankIdentity();
  return {
    name: m[1]!,
    email: m[2]!,
    date: new Date(Number(m[3]) * 1000).toISOString().replace(/\.000Z$/, "Z"),
  };
}
