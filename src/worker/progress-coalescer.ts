/** At most one `progress` event per job this often; the last value of a burst always goes out. */
export const PROGRESS_INTERVAL_MS = 100;

/**
 * Coalesces one job's `ctx.progress(value)` calls: the first goes out at once, later ones at most
 * every PROGRESS_INTERVAL_MS carrying the latest value, and `end()` sends a pending one before the job's
 * outcome. The handler never waits: reporting is a field write and, at most, a timer.
 */
export class ProgressCoalescer {
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private pending: { value: unknown } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(private readonly send: (value: unknown) => void) {}

  report(value: unknown): void {
    if (this.ended) return;
    this.pending = { value };
    if (this.timer !== undefined) return;
    const wait = this.lastSentAt + PROGRESS_INTERVAL_MS - Date.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  }

  /** The job ended: its last unsent value goes out now, later calls are ignored. */
  end(): void {
    this.flush();
    this.ended = true;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const pending = this.pending;
    if (pending === undefined) return;
    this.pending = undefined;
    this.lastSentAt = Date.now();
    this.send(pending.value);
  }
}
