/**
 * Collects keys from a burst of events and hands them over once the burst goes quiet for
 * `quietMs`, or `maxWaitMs` after its first event, whichever comes first, so a writer that never
 * pauses still gets checked.
 */
export class Debouncer<K> {
  private readonly pending = new Set<K>();
  private quietTimer: NodeJS.Timeout | undefined;
  private maxTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly quietMs: number,
    private readonly maxWaitMs: number,
    private readonly flush: (keys: Set<K>) => void,
  ) {}

  add(keys: Iterable<K>): void {
    for (const key of keys) this.pending.add(key);
    if (this.pending.size === 0) return;
    clearTimeout(this.quietTimer);
    this.quietTimer = setTimeout(() => this.fire(), this.quietMs);
    this.maxTimer ??= setTimeout(() => this.fire(), this.maxWaitMs);
  }

  /** Drops what is pending: a full check is about to cover it. */
  clear(): void {
    clearTimeout(this.quietTimer);
    clearTimeout(this.maxTimer);
    this.quietTimer = this.maxTimer = undefined;
    this.pending.clear();
  }

  private fire(): void {
    const keys = new Set(this.pending);
    this.clear();
    if (keys.size) this.flush(keys);
  }
}
