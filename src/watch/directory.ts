import { watch, statSync, type FSWatcher } from "node:fs";
import path from "node:path";

/** What a change in a watched directory is about: one entry by name, or everything in it. */
export type DirectoryChange = { entry: string } | "everything";

/**
 * Watches one directory for changes to its entries. While the directory does not exist, it
 * watches the nearest existing ancestor for the next path component to appear, and re-arms on
 * the directory itself once it does (a watch on a deleted directory never fires again).
 */
export class DirectoryWatch {
  private watcher: FSWatcher | undefined;
  /** The directory actually watched: the target, or its nearest existing ancestor. */
  private armedAt = "";
  private armedInode = 0;
  private closed = false;

  constructor(
    readonly dir: string,
    private readonly onChange: (change: DirectoryChange) => void,
    private readonly onError: (error: Error) => void,
  ) {}

  /** Starts watching; returns whether the target directory itself is watched (not an ancestor). */
  arm(): boolean {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.closed) return false;
    for (;;) {
      const at = nearestDirectory(this.dir);
      try {
        this.watcher = watch(at.path, { persistent: true }, (_type, name) => this.onEvent(name));
      } catch (error) {
        // ENOSPC (inotify watch limit) or EACCES: counted, retried at the next check.
        this.onError(error as Error);
        return false;
      }
      this.watcher.on("error", (error) => {
        this.onError(error);
        this.rearm();
      });
      this.armedAt = at.path;
      this.armedInode = at.inode;
      // A deeper component made between the stat and the watch would go unseen: look once more.
      if (nearestDirectory(this.dir).path === at.path) return at.path === this.dir;
      this.watcher.close();
    }
  }

  /** Whether the watch sits on the directory itself. */
  get onTarget(): boolean {
    return this.watcher !== undefined && this.armedAt === this.dir;
  }

  /**
   * Re-arms when the watched directory was replaced or the target has appeared; reports the change.
   */
  verify(): void {
    const now = nearestDirectory(this.dir);
    if (this.watcher && now.path === this.armedAt && now.inode === this.armedInode) return;
    this.rearm();
  }

  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.watcher = undefined;
  }

  private rearm(): void {
    this.arm();
    this.onChange("everything");
  }

  private onEvent(name: string | null): void {
    if (this.armedAt === this.dir) {
      // The watched directory itself was removed or renamed: inotify names it by its own base name.
      if (name === null || name === path.basename(this.dir)) this.verify();
      this.onChange(name === null ? "everything" : { entry: name });
      return;
    }
    const next = path.relative(this.armedAt, this.dir).split(path.sep)[0];
    if (name === null || name === next || name === path.basename(this.armedAt)) this.verify();
  }
}

/** The directory itself if it exists, else its nearest existing ancestor, with its inode. */
function nearestDirectory(dir: string): { path: string; inode: number } {
  for (let at = dir; ; at = path.dirname(at)) {
    try {
      const stat = statSync(at);
      if (stat.isDirectory()) return { path: at, inode: stat.ino };
    } catch {
      // Missing or unreadable: try the parent.
    }
    if (at === path.dirname(at)) return { path: at, inode: 0 };
  }
}
