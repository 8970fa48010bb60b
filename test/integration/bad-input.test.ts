import { fork } from 'node:child_process';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { defineTopology, Job, type JobContext, type JobHandler, type Warren } from '../../src';
import { FaultLedger } from '../resilience/fault-ledger';
import { createBrokerUser, deleteBrokerUser, type BrokerUser } from '../support/broker-user';
import type { PublisherReport } from '../fixtures/fuzz-publisher';
import { BROKER_URL, cleanup, testWarren } from '../support/test-broker';
import { passTime, waitFor } from '../support/wait-for';
import { FUZZ_MAX_BODY_BYTES, fuzzMessages, type FuzzMessage, type QueueKey } from './fuzz-messages';
import { planOf } from '../../src/warren';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 180_000;

/**
 * Fuzz: hundreds of hostile messages from plain AMQP clients (guest and a second broker user, whose
 * messages carry its `user_id`), mixed with good jobs, into a quorum and a classic queue: random AMQP
 * properties, header values of every field type, forged `warren-*` and `x-*` headers, empty, huge,
 * deep and non-UTF-8 bodies, jobs of the other queue (fuzz-messages.ts). Every good job must complete
 * exactly once, every bad one land in dead letters with the reason that fits it, the worker neither
 * crash nor stall, and unrelated publishes keep their confirm latency. The generator is seeded: a
 * failure replays exactly with the same SEED.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_240_611);

const Order = z.object({ orderId: z.string().min(1), qty: z.number().int().positive() });
type OrderData = z.infer<typeof Order>;

const topology = defineTopology({ queues: { intake: {}, legacy: { type: 'classic' }, pings: {} } });
const RETRY = { attempts: 2, backoff: { type: 'fixed' as const, delayMs: 100 } };

/** A good job with `failFirst` fails its first attempt: its retry is a republish of a foreign message. */
function runOrder(ledger: FaultLedger, data: OrderData & { failFirst?: boolean }, ctx: JobContext): void {
  if (data.failFirst && ctx.attempt === 1) throw new Error('first attempt fails on purpose');
  ledger.ran(data.orderId);
}

@Job('intake.order', { queue: 'intake', schema: Order, ...RETRY })
class IntakeOrder implements JobHandler<OrderData> {
  constructor(private readonly ledger: FaultLedger) {}
  async handle(data: OrderData, ctx: JobContext) {
    runOrder(this.ledger, data, ctx);
  }
}

@Job('legacy.order', { queue: 'legacy', schema: Order, ...RETRY })
class LegacyOrder implements JobHandler<OrderData> {
  constructor(private readonly ledger: FaultLedger) {}
  async handle(data: OrderData, ctx: JobContext) {
    runOrder(this.ledger, data, ctx);
  }
}

@Job('pings.ping', { queue: 'pings', concurrency: 50 })
class Ping implements JobHandler<{ n: number }> {
  async handle() {}
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Unrelated publishes, one after another, until stopped: their confirm latencies in ms. */
function publishStream(warren: Warren<object>): { stop: () => Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    for (let n = 0; running; n++) {
      const started = performance.now();
      await warren.publish('pings.ping', { n });
      latencies.push(performance.now() - started);
      // A steady stream, not a flood: about 200 publishes a second.
      await passTime(5);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return latencies;
    },
  };
}

/**
 * Runs test/fixtures/fuzz-publisher.js with `env`, tracking each message of `batch` in the ledger as
 * the child reports its confirm. Resolves with the messages the broker did not take.
 */
function runFuzzPublisher(
  batch: readonly FuzzMessage[],
  ledger: FaultLedger,
  env: Record<string, string>,
): Promise<FuzzMessage[]> {
  const settle = new Map<string, (error?: Error) => void>();
  const taken = batch.map((m) =>
    ledger.track(
      m.id,
      new Promise<void>((resolve, reject) =>
        settle.set(m.id, (error) => (error ? reject(error) : resolve())),
      ),
    ),
  );
  const child = fork(join(__dirname, '../fixtures/fuzz-publisher.js'), [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.on('message', (report: PublisherReport) => {
      if ('done' in report) return;
      settle.get(report.id)?.(report.ok ? undefined : new Error(report.error));
      settle.delete(report.id);
    });
    child.on('exit', (code) => {
      for (const fail of settle.values()) fail(new Error(`the fuzz publisher exited (${code}) first`));
      if (code !== 0) reject(new Error(`the fuzz publisher exited with ${code}`));
      else Promise.all(taken).then((ok) => resolve(batch.filter((_, i) => !ok[i])), reject);
    });
  });
}

/** Which fuzz message a dead letter is: by message id, else by the id written into its body. */
function fuzzIdOf(letter: { jobId: string | undefined; data: unknown }): string | undefined {
  if (letter.jobId?.startsWith('fz-')) return letter.jobId;
  const text = typeof letter.data === 'string' ? letter.data : JSON.stringify(letter.data);
  return /fz-\d+/.exec(text ?? '')?.[0];
}

describe('bad input from foreign publishers (fuzz)', () => {
  let other: BrokerUser | undefined;
  before(async () => {
    other = await createBrokerUser('fuzz');
  });
  after(() => deleteBrokerUser(other));
  afterEach(cleanup);

  it('runs every good job once, parks every bad one with its reason, keeps unrelated publishes fast', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const ledger = new FaultLedger('8. bad input (fuzz, quorum + classic queue, two broker users)');
    const warren = await testWarren({
      topology,
      handlers: [new IntakeOrder(ledger), new LegacyOrder(ledger), new Ping()],
      worker: { maxBodyBytes: FUZZ_MAX_BODY_BYTES },
    });
    await warren.start();
    const messages = fuzzMessages(SEED, 'fz');
    const queueName = (queue: QueueKey) =>
      planOf(warren).queues.find((q) => q.role === 'job' && q.key === queue)!.name;
    /** Sends the fuzz from a process of its own (guest and the second user); the ones the broker refused. */
    const send = (batch: readonly FuzzMessage[], prefix: string, goodOnly: boolean) =>
      runFuzzPublisher(batch, ledger, {
        SEED: String(SEED),
        PREFIX: prefix,
        GOOD_ONLY: goodOnly ? '1' : '0',
        QUEUE_INTAKE: queueName('intake'),
        QUEUE_LEGACY: queueName('legacy'),
        OWN_URL: BROKER_URL,
        FOREIGN_URL: other!.url,
        FOREIGN_USER: other!.name,
      });

    // The baseline: the same run without the hostile messages (its good jobs under other ids).
    const baselineGood = fuzzMessages(SEED, 'fb').filter((m) => m.expected === 'good');
    const baselineStream = publishStream(warren);
    assert.deepEqual(await send(baselineGood, 'fb', true), []);
    await waitFor(() => baselineGood.every((m) => ledger.runsOf(m.id) > 0), {
      timeoutMs: 60_000,
      what: `the ${baselineGood.length} good jobs of the baseline to run`,
    });
    const baseline = await baselineStream.stop();

    const stream = publishStream(warren);
    const started = Date.now();
    const notTaken = await send(messages, 'fz', false);
    assert.deepEqual(
      notTaken.map((m) => `${m.id} ${m.kind}`),
      [],
      'the broker took every fuzz message',
    );
    const good = messages.filter((m) => m.expected === 'good');
    const bad = messages.filter((m) => m.expected !== 'good');
    const badIn = (queue: QueueKey) => bad.filter((m) => m.queue === queue).length;
    await waitFor(() => good.every((m) => ledger.runsOf(m.id) > 0), {
      timeoutMs: 60_000,
      what: `all ${good.length} good jobs to run`,
    }).catch((error: Error) => {
      const notRun = good.filter((m) => ledger.runsOf(m.id) === 0).map((m) => `${m.id} ${m.queue} ${m.kind}`);
      throw new Error(`${error.message}; ${notRun.length} did not run: ${notRun.slice(0, 20).join(', ')}`);
    });
    const counts = await waitFor(
      async () => {
        const c = {
          intake: await warren.deadLetters.count('intake'),
          legacy: await warren.deadLetters.count('legacy'),
        };
        return c.intake >= badIn('intake') && c.legacy >= badIn('legacy') ? c : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, what: `all ${bad.length} bad messages in dead letters` },
    );
    const settledMs = Date.now() - started;
    const hostile = await stream.stop();

    // Every bad message is in its queue's dead letters, once, with the reason that fits it.
    const reasons = new Map<string, string[]>();
    for (const queue of ['intake', 'legacy'] as const) {
      for (const letter of await warren.deadLetters.list(queue, { limit: counts[queue] + 10 })) {
        const id = fuzzIdOf(letter) ?? `unidentified (${letter.reason})`;
        reasons.set(id, [...(reasons.get(id) ?? []), letter.reason]);
      }
    }
    const wrong = bad
      .filter((m) => reasons.get(m.id)?.join() !== m.expected)
      .map(
        (m) =>
          `${m.id} ${m.queue} ${m.kind}${m.foreign ? ' (foreign)' : ''}: ` +
          `expected ${m.expected}, got ${reasons.get(m.id)?.join() ?? 'nothing'}`,
      );
    assert.deepEqual(wrong, []);
    assert.deepEqual(
      good.filter((m) => reasons.has(m.id)).map((m) => m.id),
      [],
      'no good job is in dead letters',
    );
    assert.deepEqual(
      counts,
      { intake: badIn('intake'), legacy: badIn('legacy') },
      'no stray or duplicate dead letters',
    );
    for (const m of bad) ledger.ran(m.id);

    // Still consuming: jobs published after the fuzz run at once.
    assert.ok(warren.health().healthy);
    const afterIds = Array.from({ length: 20 }, (_, i) => `after-${i}`);
    await Promise.all(
      afterIds.map((id, i) =>
        ledger.track(
          id,
          warren.publish(i % 2 ? LegacyOrder : IntakeOrder, { orderId: id, qty: 1 }, { jobId: id }),
        ),
      ),
    );
    await waitFor(() => afterIds.every((id) => ledger.runsOf(id) > 0), {
      timeoutMs: 10_000,
      what: 'the jobs published after the fuzz',
    });

    // Unrelated publishes were not held up: p99 confirm latency within max(2x, +25 ms) of the baseline.
    const p99 = { baseline: percentile(baseline, 99), hostile: percentile(hostile, 99) };
    const allowed = Math.max(2 * p99.baseline, p99.baseline + 25);
    const row = ledger.report(
      settledMs,
      'no fault to recover from: fuzz sent until every message ran or was dead-lettered',
      {
        good: good.length,
        bad: bad.length,
        foreign: messages.filter((m) => m.foreign).length,
        deadLetters: counts,
        seed: SEED,
        streamP99Ms: { baseline: round(p99.baseline), hostile: round(p99.hostile), allowed: round(allowed) },
        streamPublishes: { baseline: baseline.length, hostile: hostile.length },
      },
    );
    assert.ok(bad.length >= 500, `at least 500 hostile messages (${bad.length})`);
    assert.equal(row.lost, 0);
    assert.equal(row.duplicates, 0, 'every good job completed exactly once');
    assert.deepEqual(ledger.strangers(), []);
    assert.ok(
      p99.hostile <= allowed,
      `unrelated publishes: p99 ${round(p99.hostile)} ms during the fuzz, ` +
        `${round(p99.baseline)} ms without it`,
    );
  });
});

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
