import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, type JobContext, type JobHandler } from '../../src';
import { planOf } from '../../src/warren';
import { brokerUnderTest } from '../support/broker-under-test';
import { cleanup, rawConnection, testWarren } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';

// A quorum queue that retries in place after 400 ms: on RabbitMQ 4.3 a failed attempt is rejected and the
// broker redelivers it after the delay; on 3.10 the same topology retries through the 400 ms hold.
const topology = defineTopology({
  queues: { billing: { type: 'quorum', inPlaceRetryMs: 400, deliveryLimit: 5 } },
});

type Run = { attempt: number; at: number; headers: Readonly<Record<string, unknown>> };

@Job('billing.charge', { queue: 'billing', attempts: 3, backoff: { type: 'fixed', delayMs: 400 } })
class ChargeJob implements JobHandler<{ failTimes: number }> {
  readonly runs: Run[] = [];
  async handle(data: { failTimes: number }, ctx: JobContext) {
    this.runs.push({ attempt: ctx.attempt, at: Date.now(), headers: ctx.headers });
    if (ctx.attempt <= data.failTimes) throw new Error(`declined ${ctx.attempt}`);
  }
}

const inPlaceOn = async () => {
  const broker = await brokerUnderTest();
  return broker.major > 4 || (broker.major === 4 && broker.minor >= 3);
};

describe('in-place retries (quorum x-delayed-retry, RabbitMQ 4.3+)', () => {
  afterEach(cleanup);

  it('retries in the queue itself on 4.3 (the attempt from x-delivery-count), through the hold on 3.10', async () => {
    const charge = new ChargeJob();
    const warren = await testWarren({ topology, handlers: [charge] });
    await warren.start();
    const retried: { nextAttempt: number; delayMs: number }[] = [];
    warren.on('retried', (e) => retried.push(e));
    const completed = nextEvent<{ attempt: number }>(warren, 'completed');
    await warren.publish('billing.charge', { failTimes: 2 });
    assert.equal((await completed).attempt, 3);
    assert.deepEqual(
      charge.runs.map((r) => r.attempt),
      [1, 2, 3],
    );
    assert.deepEqual(
      retried.map((r) => [r.nextAttempt, r.delayMs]),
      [
        [2, 400],
        [3, 400],
      ],
    );
    for (let i = 1; i < charge.runs.length; i++) {
      const gap = charge.runs[i]!.at - charge.runs[i - 1]!.at;
      assert.ok(gap >= 390, `retry ${i} came after ${gap} ms, before its 400 ms backoff`);
    }
    const hold = planOf(warren).delay.holds.find((h) => h.ttlMs === 400)!.name;
    if (await inPlaceOn()) {
      // the same message back: its own warren-attempt, the broker's count, no trip through a delay queue
      assert.deepEqual(
        charge.runs.map((r) => [r.headers['warren-attempt'] ?? 1, r.headers['x-delivery-count'] ?? 0]),
        [
          [1, 0],
          [1, 1],
          [1, 2],
        ],
      );
      assert.ok(charge.runs.every((r) => r.headers['x-death'] === undefined));
    } else {
      for (const run of charge.runs.slice(1)) {
        const deaths = run.headers['x-death'] as { queue: string }[];
        assert.deepEqual(
          deaths.map((d) => d.queue),
          [hold],
        );
      }
    }
  });

  it('dead-letters after the last attempt with its reason and attempt count, on either broker', async () => {
    const charge = new ChargeJob();
    const warren = await testWarren({ topology, handlers: [charge] });
    await warren.start();
    const dead = nextEvent<{ reason: string; attempt: number }>(warren, 'deadLettered');
    await warren.publish('billing.charge', { failTimes: 99 }, { jobId: 'hopeless' });
    const event = await dead;
    assert.deepEqual([event.reason, event.attempt], ['attempts-exhausted', 3]);
    const [letter] = await waitFor(async () => {
      const letters = await warren.deadLetters.list('billing');
      return letters.length === 1 ? letters : undefined;
    });
    assert.equal(letter!.reason, 'attempts-exhausted');
    assert.equal(letter!.attempt, 3);
    assert.match(letter!.lastError!, /declined 3/);
    assert.equal(charge.runs.length, 3);
  });

  it('ignores an x-delivery-count a publisher wrote: only a redelivery carries the broker’s', async () => {
    const charge = new ChargeJob();
    const warren = await testWarren({ topology, handlers: [charge] });
    await warren.start();
    const queue = planOf(warren).jobs.get('billing.charge')!.queueName;
    const completed = nextEvent<{ attempt: number }>(warren, 'completed');
    const connection = await rawConnection();
    try {
      const channel = await connection.createConfirmChannel();
      await new Promise<void>((resolve, reject) =>
        channel.sendToQueue(
          queue,
          Buffer.from(JSON.stringify({ failTimes: 1 })),
          {
            type: 'billing.charge',
            contentType: 'application/json',
            persistent: true,
            headers: { 'x-delivery-count': 50 },
          },
          (err) => (err ? reject(err) : resolve()),
        ),
      );
    } finally {
      await connection.close();
    }
    // attempt 1 fails and is retried; with the forged count believed it would have been dead-lettered
    assert.equal((await completed).attempt, 2);
    assert.deepEqual(
      charge.runs.map((r) => r.attempt),
      [1, 2],
    );
  });
});
