import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, ShutdownError, type JobContext, type JobHandler } from '../../src';
import { cleanup, messageCount, testWarren } from '../support/test-broker';
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

  it('refuses publishes after close with a ShutdownError', async () => {
    const warren = await testWarren({ topology, handlers: [new SlowJob()] });
    await warren.close();
    await assert.rejects(warren.publish('work.slow', { n: 1, ms: 1 }), ShutdownError);
  });
});
