import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, ShutdownError, type JobContext, type JobHandler } from '../../src';
import { cleanup, messageCount, testWarren } from '../support/test-broker';
import { BROKER_URL, MANAGEMENT_URL } from '../support/broker-under-test';
import { passTime, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({ queues: { work: {} } });

@Job('work.slow', { queue: 'work', attempts: 1, concurrency: 10 })
class SlowJob implements JobHandler<{ n: number; ms: number }> {
  running = 0;
  readonly finished: number[] = [];
  readonly aborted: number[] = [];
  async handle(data: { n: number; ms: number }, ctx: JobContext) {
    this.running += 1;
    try {
      // Simulated work that outlasts (or not) the shutdown grace; an abort ends it early.
      await passTime(data.ms, ctx.signal).catch((error: unknown) => {
        this.aborted.push(data.n);
        throw error;
      });
      this.finished.push(data.n);
    } finally {
      this.running -= 1;
    }
  }
}

/** The consumers of `queue` as the broker's management API lists them. */
async function consumersOf(queue: string): Promise<{ prefetch_count: number }[]> {
  const broker = new URL(BROKER_URL);
  const credentials = `${decodeURIComponent(broker.username || 'guest')}:${decodeURIComponent(broker.password || 'guest')}`;
  const response = await fetch(new URL('/api/consumers/%2F', MANAGEMENT_URL), {
    headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` },
    signal: AbortSignal.timeout(15_000),
  });
  const consumers = (await response.json()) as { queue: { name: string }; prefetch_count: number }[];
  return consumers.filter((consumer) => consumer.queue.name === queue);
}

const heldTopology = defineTopology({ queues: { held: {} } });

@Job('held.slow', { queue: 'held', attempts: 1, concurrency: 2 })
class HeldJob implements JobHandler<{ n: number }> {
  running = 0;
  mostAtOnce = 0;
  readonly started: number[] = [];
  async handle(data: { n: number }, ctx: JobContext) {
    this.started.push(data.n);
    this.running += 1;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    try {
      await passTime(60_000, ctx.signal);
    } finally {
      this.running -= 1;
    }
  }
}

describe('graceful shutdown', () => {
  afterEach(cleanup);

  it('lets in-flight jobs finish and acks them before close resolves', async () => {
    const slow = new SlowJob();
    const warren = await testWarren({ topology, handlers: [slow] });
    await warren.start();
    for (let n = 0; n < 5; n++) await warren.publish('work.slow', { n, ms: 400 });
    await waitFor(() => slow.running === 5, { what: 'five running jobs' });
    await warren.close({ graceMs: 5000 });
    assert.deepEqual([...slow.finished].sort(), [0, 1, 2, 3, 4]);
    assert.equal(await messageCount(planOf(warren).jobs.get('work.slow')!.queueName), 0);
  });

  it('aborts jobs still running after the grace period and returns them to the queue', async () => {
    const slow = new SlowJob();
    const warren = await testWarren({ topology, handlers: [slow] });
    await warren.start();
    await warren.publish('work.slow', { n: 1, ms: 60_000 });
    await warren.publish('work.slow', { n: 2, ms: 100 });
    await waitFor(() => slow.finished.includes(2) && slow.running === 1, { what: 'one long job running' });
    const started = Date.now();
    await warren.close({ graceMs: 300 });
    assert.ok(Date.now() - started < 3000);
    assert.deepEqual(slow.aborted, [1]);
    assert.equal(
      await messageCount(planOf(warren).jobs.get('work.slow')!.queueName),
      1,
      'the aborted job is back in its queue',
    );
  });

  it('holds deliveries ahead of its concurrency without running them, and returns them unrun when the grace ends', async () => {
    const held = new HeldJob();
    const warren = await testWarren({
      topology: heldTopology,
      handlers: [held],
      worker: { prefetchAhead: 2 },
    });
    const queue = planOf(warren).jobs.get('held.slow')!.queueName;
    for (let n = 0; n < 6; n++) await warren.publish('held.slow', { n });
    await warren.start();
    // prefetch 4 (concurrency 2 and as many ahead): two run, two wait in the worker, two in the queue
    await waitFor(async () => held.running === 2 && (await messageCount(queue)) === 2, {
      what: 'two running, two held, two left in the queue',
    });
    assert.equal(warren.health().consumers[0]!.activeJobs, 4, 'the held deliveries count as active');
    await warren.close({ graceMs: 200 });
    assert.equal(held.mostAtOnce, 2, 'never more than the concurrency at once');
    assert.deepEqual([...held.started].sort(), [0, 1], 'the held ones never ran');
    assert.equal(await messageCount(queue), 6, 'the aborted and the held jobs are back in the queue');
  });

  it('holds nothing ahead by default (worker.prefetchAhead 0): the prefetch is the concurrency', async () => {
    const prefetchOf = async (prefetchAhead: number | undefined) => {
      const warren = await testWarren({
        topology: heldTopology,
        handlers: [new HeldJob()],
        ...(prefetchAhead === undefined ? {} : { worker: { prefetchAhead } }),
      });
      const queue = planOf(warren).jobs.get('held.slow')!.queueName;
      await warren.start();
      try {
        return await waitFor(async () => (await consumersOf(queue))[0]?.prefetch_count, {
          what: `the consumer of ${queue} in the management API`,
        });
      } finally {
        await warren.close();
      }
    };
    assert.equal(await prefetchOf(undefined), 2);
    assert.equal(await prefetchOf(1), 3);
    assert.equal(await prefetchOf(2), 4);
    assert.equal(await prefetchOf(5), 4, 'at most the concurrency ahead');
  });

  it('refuses publishes after close with a ShutdownError', async () => {
    const warren = await testWarren({ topology, handlers: [new SlowJob()] });
    await warren.close();
    await assert.rejects(warren.publish('work.slow', { n: 1, ms: 1 }), ShutdownError);
  });
});
