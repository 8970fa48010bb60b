import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  ConfigurationError,
  defineTopology,
  Job,
  PayloadValidationError,
  PublishError,
  UnknownJobError,
  type JobContext,
  type JobHandler,
  type Warren,
} from '../../src';
import { cleanup, messageCount, rawConnection, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: {
    orders: { bind: { exchange: 'jobs', pattern: 'order.*' }, maxPriority: 5 },
    lonely: {},
  },
});

const Order = z.object({ label: z.string().min(1) });
type Label = z.infer<typeof Order>;

/** Records what ran, in order, with the time each run started. */
class Runs {
  readonly seen: { label: string; jobId: string; at: number }[] = [];
  record(label: string, ctx: JobContext): void {
    this.seen.push({ label, jobId: ctx.jobId, at: Date.now() });
  }
}

@Job('order.placed', { queue: 'orders', attempts: 1, schema: Order })
class OrderPlaced implements JobHandler<Label> {
  constructor(private readonly runs: Runs) {}
  handle(data: Label, ctx: JobContext): void {
    this.runs.record(data.label, ctx);
  }
}

@Job('lonely.job', { queue: 'lonely', attempts: 1 })
class LonelyJob implements JobHandler<object> {
  handle(): void {}
}

const ordersQueue = (warren: Warren<object>) => planOf(warren).jobs.get('order.placed')!.queueName;

describe('publishMany', () => {
  afterEach(cleanup);
  after(cleanup);

  it('returns one confirmed result per job, in input order, and every job runs', async () => {
    const runs = new Runs();
    const warren = await testWarren({ topology, handlers: [new OrderPlaced(runs)], jobs: [LonelyJob] });
    const ids = Array.from({ length: 200 }, (_, i) => `order-${i}`);
    const results = await warren.publishMany(
      ids.map((jobId, i) => ({ job: OrderPlaced, data: { label: `n${i}` }, options: { jobId } })),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ids.map(() => 'confirmed'),
    );
    assert.deepEqual(
      results.map((r) => r.job.jobId),
      ids,
    );
    assert.equal(results[0]!.job.name, 'order.placed');
    await warren.start();
    await waitFor(() => runs.seen.length === ids.length, { what: 'every job to run' });
    assert.deepEqual(new Set(runs.seen.map((r) => r.jobId)), new Set(ids));
  });

  it('fails only the unroutable job of a batch, with PUBLISH_UNROUTABLE', async () => {
    const warren = await testWarren({ topology, jobs: [OrderPlaced, LonelyJob] });
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    await channel.deleteQueue(planOf(warren).jobs.get('lonely.job')!.queueName);
    await connection.close();
    const results = await warren.publishMany([
      { job: OrderPlaced, data: { label: 'a' } },
      { job: 'order.placed', data: { label: 'b' } },
      { job: LonelyJob, data: {} },
      { job: OrderPlaced, data: { label: 'c' } },
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['confirmed', 'confirmed', 'failed', 'confirmed'],
    );
    const failed = results[2]!;
    assert.ok(failed.status === 'failed');
    assert.ok(failed.error instanceof PublishError);
    assert.equal(failed.error.code, 'PUBLISH_UNROUTABLE');
    assert.equal(failed.job.name, 'lonely.job');
    assert.equal(await messageCount(ordersQueue(warren)), 3);
  });

  it('fails the jobs for a deleted exchange and sends the rest on a new channel', async () => {
    const warren = await testWarren({ topology, jobs: [OrderPlaced, LonelyJob] });
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    await channel.deleteExchange(planOf(warren).jobs.get('order.placed')!.route.exchange);
    await connection.close();
    // The publish to the missing exchange closes the channel (404) with the others in flight or buffered.
    const lonely = Array.from({ length: 300 }, () => ({ job: LonelyJob, data: {} }));
    const results = await warren.publishMany([
      ...lonely.slice(0, 100),
      { job: OrderPlaced, data: { label: 'lost' } },
      ...lonely.slice(100),
    ]);
    const failed = results.flatMap((r, i) => (r.status === 'failed' ? [{ i, code: r.error.code }] : []));
    assert.deepEqual(failed, [{ i: 100, code: 'PUBLISH_UNROUTABLE' }]);
    // At least once: those stored but not yet confirmed when the channel closed are sent again.
    assert.ok((await messageCount(planOf(warren).jobs.get('lonely.job')!.queueName)) >= 300);
  });

  it('checks every payload and option before sending anything, naming the bad index', async () => {
    const warren = await testWarren({ topology, jobs: [OrderPlaced, LonelyJob] });
    const good = { job: OrderPlaced, data: { label: 'ok' } };
    await assert.rejects(
      warren.publishMany([good, good, { job: OrderPlaced, data: { label: '' } }, good]),
      (error: unknown) => {
        assert.ok(error instanceof PayloadValidationError);
        assert.equal(error.code, 'PAYLOAD_INVALID');
        assert.equal(error.batchIndex, 2);
        assert.match(error.message, /\[2\]/);
        return true;
      },
    );
    await assert.rejects(
      warren.publishMany([good, { job: LonelyJob, data: {}, options: { priority: 1 } }]),
      (error: unknown) => error instanceof ConfigurationError && error.batchIndex === 1,
    );
    await assert.rejects(
      warren.publishMany([good, good, good, { job: 'order.nope', data: {} }]),
      (error: unknown) => error instanceof UnknownJobError && error.batchIndex === 3,
    );
    assert.equal(await messageCount(ordersQueue(warren)), 0);
  });

  it('sends delayed and prioritized jobs of one batch through the delay levels and by priority', async () => {
    const runs = new Runs();
    const warren = await testWarren({
      topology,
      handlers: [new OrderPlaced(runs)],
      jobDefaults: { concurrency: 1 },
    });
    const sentAt = Date.now();
    const results = await warren.publishMany([
      { job: OrderPlaced, data: { label: 'later' }, options: { delayMs: 600 } },
      ...['low-1', 'low-2', 'low-3'].map((label) => ({ job: OrderPlaced, data: { label } })),
      { job: OrderPlaced, data: { label: 'urgent' }, options: { priority: 5 } },
    ]);
    assert.ok(results.every((r) => r.status === 'confirmed'));
    await warren.start();
    await waitFor(() => runs.seen.length === 5, { what: 'every job to run' });
    const order = runs.seen.map((r) => r.label);
    assert.equal(order[0], 'urgent', `the prioritized job runs first (${order.join(', ')})`);
    assert.equal(order[4], 'later', 'the delayed job runs last');
    const later = runs.seen.find((r) => r.label === 'later')!;
    assert.ok(later.at - sentAt >= 600, `the delayed job waited its delay (${later.at - sentAt} ms)`);
  });

  it('makes a wrong payload a compile error, by class and by name', async () => {
    const warren = await testWarren<{ 'order.placed': Label }>({ topology, jobs: [OrderPlaced, LonelyJob] });
    // @ts-expect-error the class's handle() takes { label: string }
    await warren.publishMany([{ job: OrderPlaced, data: { name: 'x' } }]).catch(() => undefined);
    // @ts-expect-error label must be a string
    await warren.publishMany([{ job: 'order.placed', data: { label: 1 } }]).catch(() => undefined);
  });
});
