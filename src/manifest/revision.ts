// The commit the manifests were read at, and whether they differ from it. The difference is found
// as git finds it: the index read directly, a file whose stat matches its index entry taken as
// unchanged, any other hashed; HEAD's trees read from the repository's objects (git-objects.ts).
// isomorphic-git's statusMatrix walked HEAD, the index and the work tree as three trees, entry by
// entry: 9.4 s of CPU and 425 MB of heap at 30,000 node files.
import { createHash } from "../crypto.js";
import fs from "node:fs";
import path from "node:path";
import type * as GitObjects from "./git-objects.js";

// The object reader (and node:zlib with it) loads only to read objects: whether the manifests are
// dirty (an audit asks once its first node has answered), a commit's time (for a run with history).
// A run's revision is a ref, read without it.
const gitObjects = (): Promise<typeof GitObjects> => import("./git-objects.js");

/** The nearest folder at or above `dir` holding a `.git` (a folder, or a file pointing to one). */
function checkoutRoot(dir: string): string | undefined {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    if (fs.existsSync(path.join(at, ".git"))) return at;
    if (path.dirname(at) === at) return undefined;
  }
}

// A commit id: SHA-1, or SHA-256 in a repository made with --object-format=sha256.
const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
// Symbolic refs followed before giving up, as git's own limit.
const MAX_SYMREF_DEPTH = 5;

const readText = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
};

/**
 * The git directory of the checkout at or above `dir`: its `.git` folder, or where a `.git` file
 * points (a linked worktree, a submodule); with the common directory its branches are kept in.
 */
function gitDirs(dir: string): GitDirs | undefined {
  const root = checkoutRoot(dir);
  if (root === undefined) return undefined;
  const dotGit = path.join(root, ".git");
  const isFile = fs.statSync(dotGit, { throwIfNoEntry: false })?.isFile();
  const pointer = isFile ? /^gitdir: (.+)$/m.exec(readText(dotGit) ?? "") : undefined;
  if (isFile && !pointer) return undefined;
  const gitdir = pointer ? path.resolve(root, pointer[1]!.trim()) : dotGit;
  const common = readText(path.join(gitdir, "commondir"))?.trim();
  return { root, gitdir, common: common ? path.resolve(gitdir, common) : gitdir };
}

interface GitDirs {
  /** The checkout's root: the folder holding `.git`. */
  root: string;
  gitdir: string;
  common: string;
}

/** A ref's commit: its file (HEAD in the worktree's own directory), else packed-refs. */
function resolveRef(dirs: GitDirs, ref: string, depth = 0): string | null {
  // A ref is a name under refs/ (or HEAD), never a path out of the repository.
  if (depth > MAX_SYMREF_DEPTH || (ref !== "HEAD" && !/^refs\/[^\0\\]+$/.test(ref))) return null;
  if (ref.split("/").includes("..")) return null;
  for (const base of ref === "HEAD" ? [dirs.gitdir] : [dirs.gitdir, dirs.common]) {
    const value = readText(path.join(base, ref))?.trim();
    if (value === undefined) continue;
    if (value.startsWith("ref:")) return resolveRef(dirs, value.slice(4).trim(), depth + 1);
    return OBJECT_ID.test(value) ? value : null;
  }
  for (const line of readText(path.join(dirs.common, "packed-refs"))?.split("\n") ?? []) {
    const [id, name] = line.split(" ");
    if (name === ref && OBJECT_ID.test(id ?? "")) return id!;
  }
  return null;
}

/**
 * The commit the manifests were read at: HEAD of the checkout at or above `dir`, read from its
 * files as git reads it (loose refs, packed-refs, a linked worktree's own HEAD), without loading
 * isomorphic-git, which cost every audit of a checkout 25 to 50 ms of start before its first
 * session. Null outside a checkout, before the first commit, and where git keeps its refs in a
 * form not read here (reftable).
 */
export function manifestRevision(dir: string): string | null {
  const dirs = gitDirs(dir);
  return dirs ? resolveRef(dirs, "HEAD") : null;
}

/**
 * When `revision`, a commit of the checkout at or above `dir`, was committed (ISO time); undefined
 * where the commit cannot be read. A depth-1 clone holds it: it is the commit checked out.
 */
export async function revisionTime(dir: string, revision: string): Promise<string | undefined> {
  const dirs = gitDirs(dir);
  if (!dirs || objectFormat(dirs.common) !== "sha1") return undefined;
  const { commitHeader, ObjectStore } = await gitObjects();
  try {
    const commit = objectsOf(dirs, ObjectStore).read(revision);
    // `committer NAME <EMAIL> SECONDS ZONE`: the name may hold anything but the last two words.
    const seconds = commit.type === "commit" ? commitHeader(commit.data, "committer") : undefined;
    const at = new Date(Number(/ (\d+) [+-]\d{4}$/.exec(seconds ?? "")?.[1]) * 1000);
    return Number.isNaN(at.getTime()) ? undefined : at.toISOString().replace(/\.000Z$/, "Z");
  } catch {
    return undefined;
  }
}

const objectsOf = (dirs: GitDirs, Store: typeof GitObjects.ObjectStore) =>
  new Store(path.join(dirs.common, "objects"));

/**
 * Whether the manifests under `dir` differ from that commit (changed, added or deleted files, not
 * ignored ones): the audit then checked what no commit holds, and the report says so.
 */
export async function manifestDirty(dir: string): Promise<boolean> {
  const dirs = gitDirs(dir);
  if (!dirs) return false;
  if (objectFormat(dirs.common) === "sha256") return gitStatusDirty(dir);
  try {
    const { root } = dirs;
    const under = path.relative(root, path.resolve(dir)).split(path.sep).join("/");
    const index = readIndex(root, under);
    if (!index) return false;
    const head = headFiles(dirs, under, await gitObjects());
    if (head.size !== index.entries.size) return true;
    for (const [file, entry] of index.entries)
      if (entry.stage !== 0 || head.get(file) !== entry.oid) return true;
    return await workTreeDiffers(root, under, index);
  } catch {
    return false;
  }
}

/**
 * The repository's object format: `sha256` for one made with --object-format=sha256 (its ids and
 * index entries are 32 bytes), else `sha1`.
 */
function objectFormat(common: string): "sha1" | "sha256" {
  const config = readText(path.join(common, "config")) ?? "";
  const extensions = /^\s*\[extensions\]\s*$([^[]*)/im.exec(config)?.[1] ?? "";
  return /^\s*objectformat\s*=\s*sha256\s*$/im.test(extensions) ? "sha256" : "sha1";
}

/**
 * `git status` of the manifests, for a SHA-256 repository: isomorphic-git reads SHA-1 objects only
 * (it finds no HEAD there). Not dirty when git cannot say, as for any repository not read here.
 */
async function gitStatusDirty(dir: string): Promise<boolean> {
  // Loaded here, for the few repositories that need it: execa is a third of the audit's own chunk.
  const { execa } = await import("execa");
  const status = await execa(
    "git",
    ["--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all", "--", "."],
    { cwd: dir, reject: false, stdin: "ignore" },
  );
  return status.exitCode === 0 && status.stdout !== "";
}

/** An index entry: the blob it holds and the stat git saw when it wrote it. */
interface IndexEntry {
  oid: string;
  mode: number;
  stage: number;
  mtimeSeconds: number;
  ino: number;
  size: number;
}

interface GitIndex {
  /** The entries under the manifests, by their path from the repository's root. */
  entries: Map<string, IndexEntry>;
  /** When the index was written, in whole seconds. */
  written: number;
}

const GITLINK = 0o160000;
const SYMLINK = 0o120000;

/**
 * The git index's entries under `under`: none before the first `git add`, undefined for a format
 * not known here (versions 2 to 4 are) or a `.git` that is a file.
 */
function readIndex(root: string, under: string): GitIndex | undefined {
  // A `.git` file (a linked worktree, a submodule) points elsewhere: not read here.
  if (!fs.statSync(path.join(root, ".git")).isDirectory()) return undefined;
  const indexFile = path.join(root, ".git", "index");
  if (!fs.existsSync(indexFile)) return { entries: new Map(), written: 0 };
  const data = fs.readFileSync(indexFile);
  const written = Math.floor(fs.statSync(indexFile).mtimeMs / 1000);
  if (data.toString("latin1", 0, 4) !== "DIRC") return undefined;
  const version = data.readUInt32BE(4);
  if (version < 2 || version > 4) return undefined;
  const count = data.readUInt32BE(8);
  const entries = new Map<string, IndexEntry>();
  let at = 12;
  let previous: Buffer = Buffer.alloc(0);
  for (let i = 0; i < count; i++) {
    const start = at;
    const flags = data.readUInt16BE(at + 60);
    at += 62;
    // Extended flags (version 3 and later): two more bytes.
    if (flags & 0x4000) at += 2;
    let name: Buffer;
    if (version === 4) {
      // The path is the previous one less `strip` bytes, then the bytes up to a NUL.
      let byte = data[at++]!;
      let strip = byte & 0x7f;
      while (byte & 0x80) {
        byte = data[at++]!;
        strip = ((strip + 1) << 7) | (byte & 0x7f);
      }
      const end = data.indexOf(0, at);
      name = Buffer.concat([previous.subarray(0, previous.length - strip), data.subarray(at, end)]);
      at = end + 1;
    } else {
      const end = data.indexOf(0, at);
      name = data.subarray(at, end);
      // NUL-padded to a multiple of eight bytes, at least one NUL.
      at = start + ((end - start + 8) & ~7);
    }
    previous = name;
    const file = name.toString("utf8");
    if (!isUnder(file, under)) continue;
    entries.set(file, {
      oid: data.toString("hex", start + 40, start + 60),
      mode: data.readUInt32BE(start + 24),
      stage: (flags >> 12) & 3,
      mtimeSeconds: data.readUInt32BE(start + 8),
      ino: data.readUInt32BE(start + 20),
      size: data.readUInt32BE(start + 36),
    });
  }
  return { entries, written };
}

const isUnder = (file: string, under: string) =>
  under === "" || file === under || file.startsWith(`${under}/`);

/**
 * The files of HEAD under `under`, each with its object id; none before the first commit, or when
 * HEAD has no such folder.
 */
function headFiles(
  dirs: GitDirs,
  under: string,
  { commitHeader, ObjectStore, treeEntries }: typeof GitObjects,
): Map<string, string> {
  const files = new Map<string, string>();
  const commit = resolveRef(dirs, "HEAD");
  if (commit === null) return files;
  const objects = objectsOf(dirs, ObjectStore);
  const read = (oid: string, type: "commit" | "tree") => {
    const object = objects.read(oid);
    if (object.type !== type) throw new Error(`${oid} is a ${object.type}, not a ${type}`);
    return object.data;
  };
  let tree = commitHeader(read(commit, "commit"), "tree") ?? "";
  for (const name of under === "" ? [] : under.split("/")) {
    const entry = treeEntries(read(tree, "tree")).find((e) => e.name === name && e.isTree);
    if (!entry) return files;
    tree = entry.oid;
  }
  const walk = (folder: string, oid: string) => {
    for (const entry of treeEntries(read(oid, "tree"))) {
      const file = folder ? `${folder}/${entry.name}` : entry.name;
      if (entry.isTree) walk(file, entry.oid);
      else files.set(file, entry.oid);
    }
  };
  walk(under, tree);
  return files;
}

/**
 * Whether the work tree under `under` differs from the index: a tracked file changed or gone, or a
 * file neither tracked nor ignored.
 */
async function workTreeDiffers(root: string, under: string, index: GitIndex): Promise<boolean> {
  // Each file of the work tree is met once: counting the tracked ones met is enough to know that
  // none is gone, with no set of 100,000 paths beside the index.
  let tracked = 0;
  const submodules = [...index.entries].filter(([, e]) => e.mode === GITLINK).map(([f]) => f);
  const folders = [under];
  for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
    for (const item of fs.readdirSync(path.join(root, folder), { withFileTypes: true })) {
      if (item.name === ".git") continue;
      const file = folder ? `${folder}/${item.name}` : item.name;
      if (submodules.some((s) => isUnder(file, s))) continue;
      if (item.isDirectory()) folders.push(file);
      else if (item.isFile() || item.isSymbolicLink()) {
        const entry = index.entries.get(file);
        if (!entry) {
          if (!(await isIgnored(root, file))) return true;
        } else if (!sameContent(path.join(root, file), entry, index.written)) return true;
        else tracked++;
      }
    }
  }
  return tracked < index.entries.size - submodules.length;
}

/**
 * Whether git ignores `file` (a path from the checkout's root): .gitignore files, info/exclude and
 * info/exclude, as isomorphic-git reads them. Loaded only for a file the index lacks.
 */
async function isIgnored(root: string, file: string): Promise<boolean> {
  const git = (await import("isomorphic-git")).default;
  return git.isIgnored({ fs, dir: root, filepath: file });
}

/**
 * Whether the file holds its index entry's blob: by its stat when that is sure, else by hash. As
 * git does (built without USE_NSEC, as it is by default), whole seconds are compared, and a file
 * changed in the second the index was written or later may keep its stat: it is hashed.
 */
function sameContent(abs: string, entry: IndexEntry, indexWritten: number): boolean {
  const info = fs.lstatSync(abs);
  const mtime = Math.floor(info.mtimeMs / 1000);
  // The index keeps the low 32 bits of each number.
  const low = (n: number) => n % 2 ** 32;
  if (
    mtime === entry.mtimeSeconds &&
    mtime < indexWritten &&
    low(info.size) === entry.size &&
    low(info.ino) === entry.ino &&
    info.isSymbolicLink() === (entry.mode === SYMLINK)
  )
    return true;
  const content = info.isSymbolicLink() ? Buffer.from(fs.readlinkSync(abs)) : fs.readFileSync(abs);
  const blob = createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
  return blob === entry.oid;
}
