import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, TopologyConflictError, type JobContext, type JobHandler } from '../../src';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { nextEvent } from '../support/wait-for';

/**
 * docs/guide/topology.md, "Classic queues on RabbitMQ 3.10 to 3.12": a classic job queue declared as classic
 * queue version 2 through its raw `arguments` (an opt-in on 3.10-3.12, the only storage on 4.x, where version
 * 1 is refused) works as any job queue, and a queue that exists in the other version is a conflict, not a
 * silent redeclaration.
 */
const version2 = defineTopology({
  queues: { work: { type: 'classic', arguments: { 'x-queue-version': 2 } } },
});
const unversioned = defineTopology({ queues: { work: { type: 'classic' } } });

@Job('work.flaky', { queue: 'work', attempts: 3, backoff: { type: 'fixed', delayMs: 200 } })
class FlakyJob implements JobHandler<{ failTimes: number }> {
  readonly attempts: number[] = [];
  handle(data: { failTimes: number }, ctx: JobContext): void {
    this.attempts.push(ctx.attempt);
    if (ctx.attempt <= data.failTimes) throw new Error(`failure ${ctx.attempt}`);
  }
}

@Job('work.at-once', { queue: 'work', attempts: 2, backoff: { type: 'fixed', delayMs: 0 } })
class AtOnceJob implements JobHandler<object> {
  readonly attempts: number[] = [];
  handle(_data: object, ctx: JobContext): void {
    this.attempts.push(ctx.attempt);
    if (ctx.attempt === 1) throw new Error('first attempt fails');
  }
}

describe('a classic job queue declared as classic queue version 2', () => {
  afterEach(cleanup);

  it('runs, retries (at once and through its hold) and dead-letters its jobs', async () => {
    const flaky = new FlakyJob();
    const atOnce = new AtOnceJob();
    const warren = await testWarren({ topology: version2, handlers: [flaky, atOnce] });
    await warren.start();

    const completed = nextEvent<{ attempt: number; jobName: string }>(warren, 'completed');
    await warren.publish('work.flaky', { failTimes: 2 });
    assert.equal((await completed).attempt, 3);
    assert.deepEqual(flaky.attempts, [1, 2, 3]);

    const again = nextEvent<{ attempt: number }>(warren, 'completed');
    await warren.publish('work.at-once', {});
    assert.equal((await again).attempt, 2);
    assert.deepEqual(atOnce.attempts, [1, 2]);

    const dead = nextEvent<{ reason: string; attempt: number }>(warren, 'deadLettered');
    const { jobId } = await warren.publish('work.flaky', { failTimes: 9 });
    assert.equal((await dead).attempt, 3);
    const letters = await warren.deadLetters.list('work');
    assert.deepEqual(
      letters.map((l) => [l.jobId, l.attempt]),
      [[jobId, 3]],
    );
  });

  it('conflicts, naming the argument, with the same queue declared without a version (and the other way)', async () => {
    for (const [first, second, declared] of [
      [unversioned, version2, 2],
      [version2, unversioned, undefined],
    ] as const) {
      const namespace = testNamespace('queue-version');
      await testWarren({ namespace, topology: first, handlers: [new FlakyJob()] });
      await assert.rejects(
        testWarren({ namespace, topology: second, handlers: [new FlakyJob()] }),
        (error: unknown) => {
          assert.ok(error instanceof TopologyConflictError, String(error));
          assert.equal(error.entityName, `${namespace}.work`);
          assert.equal((error.declared.arguments as Record<string, unknown>)['x-queue-version'], declared);
          assert.match(error.brokerReply, /inequivalent arg 'x-queue-version'/);
          return true;
        },
      );
      await cleanup();
    }
  });
});
