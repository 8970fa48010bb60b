import type { ProcessStatus } from '../ops';

/**
 * Jobs per second per queue, from the `handled` counters the processes report in their status replies:
 * the sum over processes of each counter's change since the previous snapshot, divided by the time
 * between them. A process seen for the first time (or restarted: a new id) counts from its next
 * snapshot; a queue no process reports a counter for has no rate.
 */
export class RateMeter {
  private previous: { at: number; handled: Map<string, number> } | undefined;

  /** The rate of each queue key between the previous call and this one (none on the first call). */
  update(processes: readonly ProcessStatus[], at: number): Map<string, number> {
    const handled = new Map<string, number>();
    for (const p of processes)
      for (const q of p.queues)
        if (typeof q.handled === 'number') handled.set(`${p.id}\u0000${q.key}`, q.handled);
    const rates = new Map<string, number>();
    const before = this.previous;
    this.previous = { at, handled };
    if (!before || at <= before.at) return rates;
    const seconds = (at - before.at) / 1000;
    for (const [id, count] of handled) {
      const earlier = before.handled.get(id);
      if (earlier === undefined || count < earlier) continue;
      const key = id.slice(id.indexOf('\u0000') + 1);
      rates.set(key, (rates.get(key) ?? 0) + (count - earlier) / seconds);
    }
    return rates;
  }
}
