import { io, type Output } from "./io.js";
import type { NodeResult } from "../report/schema.js";

/**
 * Nodes done/total, drifted, failed and elapsed time: a redrawn line on a TTY, a summary line
 * otherwise.
 */
export class Progress {
  private done = 0;
  private drifted = 0;
  private failed = 0;
  private readonly started = performance.now();
  private lastDraw = 0;

  constructor(
    private readonly total: number,
    private readonly stream: Output = io().stderr,
  ) {}

  private line(): string {
    const elapsed = ((performance.now() - this.started) / 1000).toFixed(1);
    // Finished is not audited: an unreachable node is finished too, and counted as not audited.
    return `${this.done}/${this.total} nodes finished, ${this.drifted} drifted, ${this.failed} not audited, ${elapsed}s`;
  }

  update(result: NodeResult): void {
    this.done++;
    if (result.status === "drift") this.drifted++;
    if (result.status === "unreachable" || result.status === "error") this.failed++;
    if (!this.stream.isTTY) return;
    const now = performance.now();
    if (now - this.lastDraw < 100 && this.done < this.total) return;
    this.lastDraw = now;
    const width = 24;
    const filled = Math.round((this.done / Math.max(1, this.total)) * width);
    this.stream.write(
      `\r\x1b[2K[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${this.line()}`,
    );
  }

  finish(): void {
    this.stream.write(this.stream.isTTY ? `\r\x1b[2K${this.line()}\n` : `${this.line()}\n`);
  }
}
