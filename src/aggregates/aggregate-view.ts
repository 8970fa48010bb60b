import type { AggregateRecord } from './aggregate-record';
import { CountsSum } from './counts-sum';
import type { MergedHistogram } from './latency-histogram';

/** Wait or run time percentiles of a point, ms; null when no job was measured. */
export interface Percentiles {
  readonly p50: number | null;
  readonly p95: number | null;
  readonly p99: number | null;
}

/** One bucket (or hour, or day) of one queue, every process's records added up. */
export interface AggregatePoint {
  /** The bucket's start, ms since epoch. */
  readonly start: number;
  readonly completed: number;
  /** Failed attempts (retried or not). */
  readonly failed: number;
  readonly retried: number;
  readonly deadLettered: number;
  /** From the first publish (or a delayed job's due time) to the first attempt's start. */
  readonly wait: Percentiles;
  /** Handler run times, every attempt. */
  readonly run: Percentiles;
  /** Messages ready when the bucket closed (the peak, in an hour or a day); null when no process said. */
  readonly depth: number | null;
  /** The oldest waiting job's age then, ms (an estimate, docs/guide/aggregates.md); null when unknown. */
  readonly oldestWaitingMs: number | null;
  /** How many processes wrote a record for this bucket. */
  readonly processes: number;
}

/** A queue's points, one per bucket of the range, oldest first (zero counts where nothing was written). */
export interface AggregateSeries {
  /** A queue's topology key, or `*` for all queues added up. */
  readonly queue: string;
  readonly points: readonly AggregatePoint[];
}

/** A point's sum: the counts, and which processes gave them. */
class PointSum extends CountsSum {
  readonly processes = new Set<string>();
}

/**
 * Adds up records by queue and bucket start. A record of a process for a bucket it already gave is a copy
 * (appended again) and ignored; depth and oldest wait are the largest any process saw (they describe one
 * queue, not one process's share of it), the queues' depths summed in `*`.
 */
export class AggregateMerger {
  private readonly sums = new Map<string, Map<number, PointSum>>();
  private readonly seen = new Set<string>();

  /**
   * False when the record was a copy of one already added. `at`: the point it adds into (a bucket of the
   * open hour adds into that hour), by default its own start.
   */
  add(record: AggregateRecord, at = record.s): boolean {
    const id = `${record.p}\u0000${record.l}\u0000${record.s}`;
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    for (const [queue, q] of Object.entries(record.q)) {
      const sum = this.sum(queue, at);
      sum.add(q);
      sum.processes.add(record.p);
    }
    return true;
  }

  /** Each queue's series over [from, to) in steps of `lengthMs`, then `*` (all queues), queues by name. */
  series(from: number, to: number, lengthMs: number): AggregateSeries[] {
    const queues = [...this.sums.keys()].sort();
    const out = queues.map((queue) => ({ queue, points: this.points(queue, from, to, lengthMs) }));
    return [{ queue: '*', points: this.total(from, to, lengthMs) }, ...out];
  }

  private points(queue: string, from: number, to: number, lengthMs: number): AggregatePoint[] {
    const byStart = this.sums.get(queue);
    const points: AggregatePoint[] = [];
    for (let start = from; start < to; start += lengthMs) points.push(pointOf(start, byStart?.get(start)));
    return points;
  }

  private total(from: number, to: number, lengthMs: number): AggregatePoint[] {
    const points: AggregatePoint[] = [];
    for (let start = from; start < to; start += lengthMs) {
      const all = new PointSum();
      let depth: number | undefined;
      for (const byStart of this.sums.values()) {
        const s = byStart.get(start);
        if (s === undefined) continue;
        all.add(s.counts());
        // All queues: their depths add up (each queue's is the largest any process saw).
        if (s.n !== undefined) depth = (depth ?? 0) + s.n;
        for (const p of s.processes) all.processes.add(p);
      }
      all.n = depth;
      points.push(pointOf(start, all));
    }
    return points;
  }

  private sum(queue: string, start: number): PointSum {
    let byStart = this.sums.get(queue);
    if (byStart === undefined) {
      byStart = new Map();
      this.sums.set(queue, byStart);
    }
    let sum = byStart.get(start);
    if (sum === undefined) {
      sum = new PointSum();
      byStart.set(start, sum);
    }
    return sum;
  }
}

function pointOf(start: number, sum: PointSum | undefined): AggregatePoint {
  return {
    start,
    completed: sum?.c ?? 0,
    failed: sum?.f ?? 0,
    retried: sum?.r ?? 0,
    deadLettered: sum?.d ?? 0,
    wait: percentiles(sum?.w),
    run: percentiles(sum?.x),
    depth: sum?.n ?? null,
    oldestWaitingMs: sum?.o ?? null,
    processes: sum?.processes.size ?? 0,
  };
}

function percentiles(h: MergedHistogram | undefined): Percentiles {
  return {
    p50: h?.quantile(0.5) ?? null,
    p95: h?.quantile(0.95) ?? null,
    p99: h?.quantile(0.99) ?? null,
  };
}
