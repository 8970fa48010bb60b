/**
 * Deficit round-robin across keys (Shreedhar and Varghese, 1995), each job costing 1: the fair-share
 * scheduler of a queue with fairness (docs/guide/fair-share.md). Each round a key with waiting jobs earns
 * its weight in credit and runs one job per whole credit, so keys share the workers in proportion to their
 * weights whatever their backlogs, and a key that starts waiting joins at the end of the current round:
 * it runs within one round (at most one job of every other waiting key, times their weights). A key with
 * nothing waiting leaves the round with no credit kept, so an idle key saves up nothing and the scheduler
 * stays work-conserving: a lone busy key gets every free slot.
 *
 * Pure and synchronous; it holds at most what the lanes' prefetch windows let in.
 */
export class DeficitRoundRobin<T> {
  private readonly waiting = new Map<string, KeyQueue<T>>();
  /** Keys with waiting jobs, in round order; `cursor` is the key being served. */
  private readonly ring: string[] = [];
  private cursor = 0;
  private count = 0;

  constructor(private readonly weightOf: (key: string) => number) {}

  /** Jobs waiting, all keys. */
  get size(): number {
    return this.count;
  }

  push(key: string, item: T): void {
    this.count += 1;
    const queue = this.waiting.get(key);
    if (queue !== undefined) {
      queue.items.push(item);
      return;
    }
    this.waiting.set(key, { items: [item], deficit: 0 });
    if (this.ring.length === 0) {
      this.ring.push(key);
      this.cursor = 0;
      this.arrive();
      return;
    }
    // the end of the current round: just before the key being served
    this.ring.splice(this.cursor, 0, key);
    this.cursor += 1;
  }

  /** The next job to run, by deficit round-robin; undefined when nothing waits. */
  next(): { readonly key: string; readonly item: T } | undefined {
    if (this.ring.length === 0) return undefined;
    for (;;) {
      const key = this.ring[this.cursor]!;
      const queue = this.waiting.get(key)!;
      if (queue.deficit >= 1) {
        queue.deficit -= 1;
        const item = queue.items.shift()!;
        this.count -= 1;
        if (queue.items.length === 0) this.leave(key);
        return { key, item };
      }
      this.cursor = (this.cursor + 1) % this.ring.length;
      this.arrive();
    }
  }

  /** Removes and returns every waiting job (a stop hands them back to the broker). */
  drain(): T[] {
    const items = [...this.waiting.values()].flatMap((queue) => queue.items);
    this.waiting.clear();
    this.ring.length = 0;
    this.cursor = 0;
    this.count = 0;
    return items;
  }

  /** Removes the waiting jobs `drop` picks (a closed channel's, which the broker has requeued already). */
  discard(drop: (item: T) => boolean): T[] {
    const dropped: T[] = [];
    for (const [key, queue] of [...this.waiting]) {
      const kept: T[] = [];
      for (const item of queue.items) (drop(item) ? dropped : kept).push(item);
      this.count -= queue.items.length - kept.length;
      queue.items = kept;
      if (kept.length === 0) this.leave(key);
    }
    return dropped;
  }

  /** The `limit` keys with the most waiting jobs, most first. */
  busiest(limit: number): { readonly key: string; readonly waiting: number }[] {
    return [...this.waiting]
      .map(([key, queue]) => ({ key, waiting: queue.items.length }))
      .sort((a, b) => b.waiting - a.waiting)
      .slice(0, limit);
  }

  /** The key at the cursor starts its turn: it earns its weight. */
  private arrive(): void {
    const queue = this.waiting.get(this.ring[this.cursor]!)!;
    queue.deficit += this.weightOf(this.ring[this.cursor]!);
  }

  private leave(key: string): void {
    this.waiting.delete(key);
    const at = this.ring.indexOf(key);
    this.ring.splice(at, 1);
    if (this.ring.length === 0) {
      this.cursor = 0;
      return;
    }
    if (at < this.cursor) this.cursor -= 1;
    else if (at === this.cursor) {
      // the next key's turn begins
      if (this.cursor >= this.ring.length) this.cursor = 0;
      this.arrive();
    }
  }
}

interface KeyQueue<T> {
  items: T[];
  deficit: number;
}
