import type * as Prom from 'prom-client';
import type { InstrumentationTarget } from '../core';

/**
 * Per-key limits at scrape time (docs/guide/per-key-limits.md#operating), from the partitions this process owns:
 * the jobs waiting on a limit, the jobs re-delayed for one, and the busiest keys. The `key` label holds at most
 * the 10 busiest keys of each queue at each scrape (bounded cardinality: never one series per customer).
 */
export class KeyLimitGauges {
  constructor(
    prom: typeof Prom,
    registry: Prom.Registry,
    prefix: string,
    target: () => InstrumentationTarget | undefined,
  ) {
    const samples = () => target()?.keyLimits?.() ?? [];
    new prom.Gauge({
      name: `${prefix}key_limit_waiting_jobs`,
      help: 'Jobs waiting in this process because their key is at a per-key limit (unacked, held aside).',
      labelNames: ['queue'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of samples()) this.set({ queue: s.queue }, s.held);
      },
    });
    new prom.Counter({
      name: `${prefix}key_limit_deferred_total`,
      help: 'Jobs re-delayed (no attempt spent) because their key was at a per-key limit and too many waited.',
      labelNames: ['queue'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of samples()) this.inc({ queue: s.queue }, s.deferred);
      },
    });
    new prom.Gauge({
      name: `${prefix}key_limit_busiest_running_jobs`,
      help: 'Jobs running now for each of the 10 busiest keys of a queue with per-key limits.',
      labelNames: ['queue', 'key'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of samples())
          for (const k of s.busiestKeys) this.set({ queue: s.queue, key: k.key }, k.running);
      },
    });
    new prom.Gauge({
      name: `${prefix}key_limit_busiest_window_starts`,
      help: 'Starts within the rate window for each of the 10 busiest keys of a queue with per-key limits.',
      labelNames: ['queue', 'key'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of samples())
          for (const k of s.busiestKeys) this.set({ queue: s.queue, key: k.key }, k.recentStarts);
      },
    });
  }
}
