import type { QueueCounts } from './aggregate-record';
import { MergedHistogram } from './latency-histogram';

/**
 * A queue's counts added up over records: of several processes for one bucket (a reader), or of one
 * process's buckets into its hour and day (the writer's roll-ups). Counts and bins add; depth and oldest
 * wait keep the largest (they describe the queue, not one process's share of it, nor one moment of an hour).
 */
export class CountsSum {
  c = 0;
  f = 0;
  r = 0;
  d = 0;
  readonly w = new MergedHistogram();
  readonly x = new MergedHistogram();
  n: number | undefined;
  o: number | undefined;

  add(q: QueueCounts): void {
    this.c += q.c;
    this.f += q.f;
    this.r += q.r;
    this.d += q.d;
    this.w.add(q.w);
    this.x.add(q.x);
    if (q.n !== undefined) this.n = Math.max(this.n ?? 0, q.n);
    if (q.o !== undefined) this.o = Math.max(this.o ?? 0, q.o);
  }

  /** The sum as a record carries it. */
  counts(): QueueCounts {
    return {
      c: this.c,
      f: this.f,
      r: this.r,
      d: this.d,
      w: this.w.sparse(),
      x: this.x.sparse(),
      ...(this.n !== undefined ? { n: this.n } : {}),
      ...(this.o !== undefined ? { o: this.o } : {}),
    };
  }
}
