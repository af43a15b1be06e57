// An inventory as Ansible takes it from `-i PATH`: a file, or a folder each of whose files is an
// inventory, with the group_vars/ and host_vars/ beside it (in the folder, or beside the file).
// I/O only: the files' texts are read here, their contents by the pure readers.
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { InputFileError, UsageError } from "../../errors.js";

// Big enough for a 100,000-host inventory; a file past it is not an inventory.
export const MAX_INVENTORY_BYTES = 64 * 1024 * 1024;
// More files than an inventory tree holds: a folder past it is not one.
const MAX_FILES = 100_000;

/** One file read, named as the operator's path names it. */
export interface SourceFile {
  file: string;
  text: string;
}

/** Extensions Ansible leaves out of an inventory folder (its INVENTORY_IGNORE_EXTS, 2.14). */
const IGNORED_EXTENSIONS = [
  ...[".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst"],
  ...[".orig", ".ini", ".cfg", ".retry"],
];
/** Names Ansible never reads as an inventory in a folder. */
const IGNORED_NAMES = /^\.|^host_vars$|^group_vars$|^vars_plugins$/;
/** What a vars file may end with: no extension, or one of these (Ansible's YAML_FILENAME_EXTENSIONS). */
const VARS_EXTENSIONS = [".yml", ".yaml", ".json"];

/** Entries seen so far in one read of an inventory tree. */
interface Walk {
  entries: number;
}

async function readBounded(file: string): Promise<SourceFile> {
  const info = await stat(file);
  if (info.size > MAX_INVENTORY_BYTES)
    throw new InputFileError(file, `larger than ${MAX_INVENTORY_BYTES} bytes`);
  return { file, text: await readFile(file, "utf8") };
}

/** A folder's entries sorted as Python sorts them (by code point), with whether each is a folder. */
async function entries(walk: Walk, dir: string): Promise<{ name: string; folder: boolean }[]> {
  const found = await readdir(dir, { withFileTypes: true });
  walk.entries += found.length;
  if (walk.entries > MAX_FILES) throw new InputFileError(dir, `more than ${MAX_FILES} files`);
  const out: { name: string; folder: boolean }[] = [];
  for (const entry of found) {
    const full = path.join(dir, entry.name);
    // A link is followed, as Ansible follows it.
    const info = entry.isSymbolicLink() ? await stat(full).catch(() => undefined) : entry;
    if (info && (info.isDirectory() || info.isFile()))
      out.push({ name: entry.name, folder: info.isDirectory() });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The inventory files of a folder, as Ansible walks it: sorted, ignored names left out, recursive. */
async function folderSources(walk: Walk, dir: string, depth = 0): Promise<SourceFile[]> {
  if (depth > 8) throw new InputFileError(dir, "inventory folders nested more than 8 deep");
  const out: SourceFile[] = [];
  for (const { name, folder } of await entries(walk, dir)) {
    if (IGNORED_NAMES.test(name) || IGNORED_EXTENSIONS.some((ext) => name.endsWith(ext))) continue;
    const full = path.join(dir, name);
    if (folder) out.push(...(await folderSources(walk, full, depth + 1)));
    else out.push(await readBounded(full));
  }
  return out;
}

/** Ansible's vars files under a folder of one group or host: sorted, recursive, hidden and backups left out. */
async function varsFolder(walk: Walk, dir: string, depth = 0): Promise<string[]> {
  if (depth > 8) throw new InputFileError(dir, "vars folders nested more than 8 deep");
  const out: string[] = [];
  for (const { name, folder } of await entries(walk, dir)) {
    if (name.startsWith(".") || name.endsWith("~")) continue;
    const ext = path.extname(name);
    const full = path.join(dir, name);
    if (folder && !ext) out.push(...(await varsFolder(walk, full, depth + 1)));
    else if (!folder && (!ext || VARS_EXTENSIONS.includes(ext))) out.push(full);
  }
  return out;
}

/** The vars files of each name found in a group_vars or host_vars folder, in Ansible's order. */
async function varsFilesOf(walk: Walk, dir: string): Promise<Map<string, SourceFile[]>> {
  const out = new Map<string, SourceFile[]>();
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) return out;
  const listed = await entries(walk, dir);
  const byName = new Map(listed.map((e) => [e.name, e]));
  // `NAME`, then NAME.yml, .yaml, .json: the first that exists is the only one read (a folder's
  // files all are), as Ansible's find_vars_files reads them.
  const names = new Set(
    listed.map((e) => {
      const ext = path.extname(e.name);
      return VARS_EXTENSIONS.includes(ext) ? e.name.slice(0, -ext.length) : e.name;
    }),
  );
  for (const name of names) {
    if (name.startsWith(".")) continue;
    const first = ["", ...VARS_EXTENSIONS].map((ext) => byName.get(name + ext)).find(Boolean)!;
    const full = path.join(dir, first.name);
    const files = first.folder ? await varsFolder(walk, full) : [full];
    out.set(name, await Promise.all(files.map(readBounded)));
  }
  return out;
}

/** An inventory path read as Ansible reads `-i PATH`: its sources and the vars files beside them. */
export interface InventoryTree {
  /** The inventory files: the one given, or a folder's in Ansible's order. */
  sources: SourceFile[];
  /** Whether the path was a folder (its files are then Ansible inventories only). */
  folder: boolean;
  /** group_vars/<name> files by group name (`all` included), in the order Ansible reads them. */
  groupVars: Map<string, SourceFile[]>;
  /** host_vars/<name> files by host name. */
  hostVars: Map<string, SourceFile[]>;
}

/** Reads an inventory file or folder and the group_vars/ and host_vars/ beside it. */
export async function readInventoryTree(given: string, flag = "inventory"): Promise<InventoryTree> {
  const walk: Walk = { entries: 0 };
  const info = await stat(given).catch(() => undefined);
  if (!info?.isFile() && !info?.isDirectory())
    throw new UsageError(`--${flag}: no such file or folder: ${given}`);
  const folder = info.isDirectory();
  const sources = folder ? await folderSources(walk, given) : [await readBounded(given)];
  if (!sources.length) throw new InputFileError(given, "holds no inventory file Ansible reads");
  const base = folder ? given : path.dirname(given);
  return {
    sources,
    folder,
    groupVars: await varsFilesOf(walk, path.join(base, "group_vars")),
    hostVars: await varsFilesOf(walk, path.join(base, "host_vars")),
  };
}
