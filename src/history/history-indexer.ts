import type { HistoryIndex } from './history-index';

/** A writer's appends are indexed this long after the first of them (the ones after it share the round), ms. */
export const INDEX_AFTER_MS = 1000;

/**
 * Indexes the history in the background of a process that writes it (history-index.ts), so a lookup finds
 * at most a second or two of history no block covers. After an append, a round runs INDEX_AFTER_MS later
 * (plus up to half as much again, so processes that flush together spread out), unless another process's
 * round started within the last INDEX_AFTER_MS: then it looks again later, so a namespace of many writers
 * runs about one round a second, not one per writer. Best effort: a failed round is reported and the next
 * append schedules another; a lookup reads whatever no block covers.
 */
export class HistoryIndexer {
  private timer: NodeJS.Timeout | undefined;
  private lastAppendAt = 0;
  private stopped = false;

  constructor(
    private readonly index: HistoryIndex,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** The writer appended a batch. */
  appended(): void {
    this.lastAppendAt = Date.now();
    this.schedule();
  }

  /** No more rounds; waits for one in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.index.settled();
  }

  private schedule(): void {
    if (this.stopped || this.timer !== undefined || !this.index.isUsable) return;
    this.timer = setTimeout(() => void this.run(), INDEX_AFTER_MS * (1 + Math.random() / 2));
    this.timer.unref();
  }

  private async run(): Promise<void> {
    const since = this.lastAppendAt;
    try {
      const newest = await this.index.checkpoint();
      if (newest !== undefined && newest.at > Date.now() - INDEX_AFTER_MS) {
        // another process's round began after this one's appends: nothing of ours is left to it
        this.timer = undefined;
        if (newest.at < since) this.schedule();
        return;
      }
      await this.index.round();
    } catch (error) {
      this.onError(error);
    }
    this.timer = undefined;
    if (this.lastAppendAt > since) this.schedule();
  }
}
