import type * as Prom from 'prom-client';
import type { InstrumentationTarget } from '../core';

interface Depths {
  readonly ready: ReadonlyMap<string, number>;
  readonly dead: ReadonlyMap<string, number>;
  readonly delayed: number | undefined;
}

/**
 * Queue depth gauges read at scrape time by passive declares, reused for `cacheMs` so a scrape every
 * second does not become a declare per queue per second. A queue the broker cannot count (disconnected,
 * deleted) keeps no sample rather than a stale one.
 */
export class QueueDepths {
  private cached: { at: number; depths: Promise<Depths> } | undefined;

  constructor(
    prom: typeof Prom,
    registry: Prom.Registry,
    prefix: string,
    private readonly cacheMs: number,
    private readonly target: () => InstrumentationTarget | undefined,
  ) {
    const depths = () => this.read();
    new prom.Gauge({
      name: `${prefix}queue_messages`,
      help: 'Messages in each job queue: ready (waiting to run) and dead (in its dead-letter queue).',
      labelNames: ['queue', 'state'],
      registers: [registry],
      async collect() {
        this.reset();
        const { ready, dead } = await depths();
        for (const [queue, count] of ready) this.set({ queue, state: 'ready' }, count);
        for (const [queue, count] of dead) this.set({ queue, state: 'dead' }, count);
      },
    });
    new prom.Gauge({
      name: `${prefix}delayed_messages`,
      help: 'Jobs waiting in the shared delay levels (retries, delayed and postponed jobs), in total.',
      registers: [registry],
      async collect() {
        this.reset();
        const { delayed } = await depths();
        if (delayed !== undefined) this.set(delayed);
      },
    });
  }

  private read(): Promise<Depths> {
    const now = Date.now();
    if (this.cached === undefined || now - this.cached.at >= this.cacheMs)
      this.cached = { at: now, depths: this.count() };
    return this.cached.depths;
  }

  private async count(): Promise<Depths> {
    const target = this.target();
    const ready = new Map<string, number>();
    const dead = new Map<string, number>();
    if (target === undefined || !target.isConnected()) return { ready, dead, delayed: undefined };
    const count = (name: string) => target.messageCount(name).catch(() => undefined);
    await Promise.all(
      target.queues.map(async (queue) => {
        const [r, d] = await Promise.all([count(queue.name), count(queue.deadName)]);
        if (r !== undefined) ready.set(queue.key, r);
        if (d !== undefined) dead.set(queue.key, d);
      }),
    );
    const levels = await Promise.all(target.delayQueues.map(count));
    const delayed = levels.every((n) => n !== undefined)
      ? levels.reduce<number>((sum, n) => sum + n!, 0)
      : undefined;
    return { ready, dead, delayed };
  }
}
