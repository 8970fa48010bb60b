import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  defineTopology,
  Job,
  RetryLaterError,
  UnrecoverableError,
  type JobContext,
  type JobHandler,
} from '../../src';
import { delayRoute } from '../../src/topology';
import { cleanup, rawConnection, testWarren } from '../support/test-broker';
import { brokerUnderTest } from '../support/broker-under-test';
import { nextEvent, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({ queues: { work: {} } });

type Run = { attempt: number; at: number; headers: Readonly<Record<string, unknown>> };

@Job('work.flaky', { queue: 'work', attempts: 3, backoff: { type: 'fixed', delayMs: 300 } })
class FlakyJob implements JobHandler<{ failTimes: number }> {
  readonly runs: Run[] = [];
  async handle(data: { failTimes: number }, ctx: JobContext) {
    this.runs.push({ attempt: ctx.attempt, at: Date.now(), headers: ctx.headers });
    if (ctx.attempt <= data.failTimes) throw new Error(`failure ${ctx.attempt}`);
  }
}

@Job('work.signals', { queue: 'work', attempts: 5 })
class SignalJob implements JobHandler<{ mode: 'unrecoverable' | 'later' }> {
  readonly runs: Run[] = [];
  async handle(data: { mode: 'unrecoverable' | 'later' }, ctx: JobContext) {
    this.runs.push({ attempt: ctx.attempt, at: Date.now(), headers: ctx.headers });
    if (data.mode === 'unrecoverable') throw new UnrecoverableError('card declined');
    if (ctx.attempt === 1) throw new RetryLaterError(700);
  }
}

@Job('work.delayed', { queue: 'work' })
class DelayedJob implements JobHandler<{ label: string; publishedAt: number }> {
  readonly runs: {
    label: string;
    lateness: number;
    at: number;
    headers: Readonly<Record<string, unknown>>;
  }[] = [];
  async handle(data: { label: string; publishedAt: number }, ctx: JobContext) {
    this.runs.push({
      label: data.label,
      lateness: Date.now() - data.publishedAt,
      at: Date.now(),
      headers: ctx.headers,
    });
  }
}

@Job('work.slow', { queue: 'work', attempts: 2, timeoutMs: 200, backoff: { type: 'fixed', delayMs: 100 } })
class SlowJob implements JobHandler<object> {
  readonly aborted: string[] = [];
  async handle(_data: object, ctx: JobContext) {
    await new Promise<void>((resolve) => {
      ctx.signal.addEventListener('abort', () => {
        this.aborted.push(String((ctx.signal.reason as Error).name));
        resolve();
      });
    });
  }
}

describe('retries, delays and timeouts', () => {
  afterEach(cleanup);

  it('retries a fixed backoff through its hold (one queue, one hop) with warren-attempt incremented, then succeeds', async () => {
    const flaky = new FlakyJob();
    const warren = await testWarren({ topology, handlers: [flaky] });
    await warren.start();
    const retried: number[] = [];
    warren.on('retried', (e) => retried.push(e.nextAttempt));
    const completed = nextEvent<{ attempt: number }>(warren, 'completed');
    await warren.publish('work.flaky', { failTimes: 2 });
    assert.equal((await completed).attempt, 3);
    assert.deepEqual(
      flaky.runs.map((r) => r.attempt),
      [1, 2, 3],
    );
    assert.deepEqual(retried, [2, 3]);
    for (let i = 1; i < flaky.runs.length; i++) {
      const gap = flaky.runs[i]!.at - flaky.runs[i - 1]!.at;
      assert.ok(gap >= 300, `retry ${i} came after ${gap} ms, before its 300 ms backoff`);
    }
    // each retry carries only the death record of its own pass: warren strips the old ones on republish
    // (with them, the broker's cycle detection would drop the message); a fixed 300 ms backoff waits in the
    // 300 ms hold alone, never in the levels its bits would name (levels 1 and 0)
    const hold = planOf(warren).delay.holds.find((h) => h.ttlMs === 300)!.name;
    for (const run of flaky.runs.slice(1)) {
      const deaths = run.headers['x-death'] as { count: number; queue: string }[];
      assert.deepEqual(
        deaths.map((d) => [d.queue, d.count]),
        [[hold, 1]],
        JSON.stringify(deaths),
      );
    }
    assert.equal(flaky.runs[2]!.headers['warren-attempt'], 3);
  });

  it('dead-letters after the last attempt with the attempt count and the last error', async () => {
    const flaky = new FlakyJob();
    const warren = await testWarren({ topology, handlers: [flaky] });
    await warren.start();
    const dead = nextEvent<{ reason: string; attempt: number }>(warren, 'deadLettered');
    await warren.publish('work.flaky', { failTimes: 99 }, { jobId: 'hopeless' });
    const event = await dead;
    assert.equal(event.reason, 'attempts-exhausted');
    assert.equal(event.attempt, 3);
    const [letter] = await warren.deadLetters.list('work');
    assert.equal(letter!.attempt, 3);
    assert.match(letter!.lastError!, /failure 3/);
  });

  it('honours per-publish attempts over the job class setting', async () => {
    const flaky = new FlakyJob();
    const warren = await testWarren({ topology, handlers: [flaky] });
    await warren.start();
    const dead = nextEvent<{ attempt: number }>(warren, 'deadLettered');
    await warren.publish('work.flaky', { failTimes: 99 }, { attempts: 1 });
    assert.equal((await dead).attempt, 1);
    assert.equal(flaky.runs.length, 1);
  });

  it('sends an unrecoverable error straight to dead letters and honours a retry delay the handler asks for', async () => {
    const signals = new SignalJob();
    const warren = await testWarren({ topology, handlers: [signals] });
    await warren.start();
    const dead = nextEvent<{ reason: string }>(warren, 'deadLettered');
    await warren.publish('work.signals', { mode: 'unrecoverable' });
    assert.equal((await dead).reason, 'unrecoverable');
    assert.equal(signals.runs.length, 1);

    signals.runs.length = 0;
    const done = nextEvent(warren, 'completed');
    await warren.publish('work.signals', { mode: 'later' });
    await done;
    assert.equal(signals.runs.length, 2);
    assert.ok(signals.runs[1]!.at - signals.runs[0]!.at >= 700);
  });

  it('runs a delayed job no earlier than asked, and a long delay never holds back a short one', async () => {
    const delayed = new DelayedJob();
    const warren = await testWarren({ topology, handlers: [delayed] });
    await warren.start();
    const publishedAt = Date.now();
    await warren.publish('work.delayed', { label: 'one-hour', publishedAt }, { delayMs: 3_600_000 });
    await warren.publish('work.delayed', { label: 'one-second', publishedAt: Date.now() }, { delayMs: 1000 });
    await warren.publish(
      'work.delayed',
      { label: 'run-at', publishedAt: Date.now() },
      { runAt: new Date(Date.now() + 1500) },
    );
    await waitFor(() => delayed.runs.length === 2, { what: 'the short delays', timeoutMs: 5000 });
    const byLabel = Object.fromEntries(delayed.runs.map((r) => [r.label, r.lateness]));
    assert.ok(
      byLabel['one-second']! >= 1000 && byLabel['one-second']! < 1400,
      `1 s job ran after ${byLabel['one-second']} ms`,
    );
    assert.ok(
      byLabel['run-at']! >= 1500 && byLabel['run-at']! < 1900,
      `runAt job ran after ${byLabel['run-at']} ms`,
    );
    assert.equal(
      delayed.runs.some((r) => r.label === 'one-hour'),
      false,
    );

    // the 1 h job waits in the levels whose bits are set: 36 000 units of 100 ms
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    const bits = (36_000).toString(2).padStart(16, '0');
    const firstSetLevel = 15 - bits.indexOf('1');
    const level = planOf(warren).delay.levels[firstSetLevel]!;
    const { messageCount } = await channel.checkQueue(level.name);
    assert.equal(messageCount, 1, `the one-hour job should wait in ${level.name}`);
    await connection.close();
  });

  it('re-enters the levels for a delay longer than one pass can hold', async () => {
    const delayed = new DelayedJob();
    // 3 levels of 100 ms hold at most 700 ms in one pass
    const warren = await testWarren({
      topology,
      handlers: [delayed],
      delay: { queueType: 'classic', levels: 3, unitMs: 100 },
    });
    await warren.start();
    const publishedAt = Date.now();
    await warren.publish('work.delayed', { label: 'long', publishedAt }, { delayMs: 2000 });
    await waitFor(() => delayed.runs.length === 1, { timeoutMs: 5000 });
    assert.ok(delayed.runs[0]!.lateness >= 2000, `ran after ${delayed.runs[0]!.lateness} ms`);
    assert.ok(delayed.runs[0]!.lateness < 2600, `ran after ${delayed.runs[0]!.lateness} ms`);
  });

  it('aborts the signal of a job that exceeds its timeout and counts it as a failed attempt', async () => {
    const slow = new SlowJob();
    const warren = await testWarren({ topology, handlers: [slow] });
    await warren.start();
    const failures: string[] = [];
    warren.on('failed', (e) => failures.push((e.error as Error).name));
    const dead = nextEvent<{ reason: string; attempt: number }>(warren, 'deadLettered');
    await warren.publish('work.slow', {});
    const event = await dead;
    assert.equal(event.reason, 'attempts-exhausted');
    assert.equal(event.attempt, 2);
    assert.deepEqual(failures, ['JobTimeoutError', 'JobTimeoutError']);
    assert.deepEqual(slow.aborted, ['JobTimeoutError', 'JobTimeoutError']);
  });

  it('replays dead letters to the original queue with attempts reset, and purges them', async () => {
    const flaky = new FlakyJob();
    const warren = await testWarren({ topology, handlers: [flaky] });
    await warren.start();
    let dead = nextEvent<{ attempt: number }>(warren, 'deadLettered');
    await warren.publish('work.flaky', { failTimes: 99 }, { jobId: 'replay-me', attempts: 2 });
    assert.equal((await dead).attempt, 2);
    dead = nextEvent<{ attempt: number }>(warren, 'deadLettered');
    assert.equal(await warren.deadLetters.replay('work', { jobId: 'replay-me' }), 1);
    assert.equal((await dead).attempt, 2);
    assert.deepEqual(
      flaky.runs.map((r) => r.attempt),
      [1, 2, 1, 2],
    );
    assert.equal(await warren.deadLetters.count('work'), 1);
    assert.equal(await warren.deadLetters.purge('work'), 1);
    assert.equal(await warren.deadLetters.count('work'), 0);
  });

  it('proves why retries strip x-death: RabbitMQ 3.x silently drops a message re-entering the levels with it (4.x delivers it)', async () => {
    const broker = await brokerUnderTest();
    const delayed = new DelayedJob();
    // One job at a time (prefetch 1): the queue hands over a message only after the one before it ran.
    const warren = await testWarren({ topology, handlers: [delayed], jobDefaults: { concurrency: 1 } });
    await warren.start();
    const queue = planOf(warren).jobs.get('work.delayed')!.queueName;
    // 300 ms = bits 0 and 1: level 1 dead-letters into level 0, a queue the first pass recorded in x-death
    const route = delayRoute(planOf(warren).delay, 300, queue);
    const connection = await rawConnection();
    try {
      const channel = await connection.createConfirmChannel();
      const send = (label: string, headers: Record<string, unknown>) =>
        new Promise<void>((resolve, reject) =>
          channel.publish(
            route.exchange,
            route.routingKey,
            Buffer.from(JSON.stringify({ label, publishedAt: Date.now() })),
            { type: 'work.delayed', contentType: 'application/json', headers },
            (err) => (err ? reject(err) : resolve()),
          ),
        );
      await send('first-pass', {});
      const [first] = await waitFor(() => (delayed.runs.length === 1 ? delayed.runs : undefined), {
        what: 'the first pass',
      });
      assert.ok(Array.isArray(first!.headers['x-death']));
      await send('with-x-death', { ...first!.headers });
      await send('stripped', {});
      // The stripped copy is the barrier: both copies took the same route, the one with x-death first, and
      // the queue delivers one job at a time in order, so once the stripped one ran the other would have too.
      await waitFor(() => delayed.runs.some((r) => r.label === 'stripped'), { what: 'the stripped copy' });
      // 3.10's dead-letter cycle detection drops it; 4.x only drops a cycle no publish broke (measured
      // on 4.3.6: it is delivered). warren strips x-death on every republish either way.
      assert.equal(
        delayed.runs.some((r) => r.label === 'with-x-death'),
        broker.isV4,
        broker.isV4
          ? `RabbitMQ ${broker.version} should deliver the copy carrying x-death`
          : `RabbitMQ ${broker.version} should have dropped the copy carrying x-death`,
      );
    } finally {
      await connection.close();
    }
  });
});
