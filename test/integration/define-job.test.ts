import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  defineJob,
  defineTopology,
  JobResultError,
  JobTimeoutError,
  type JobContext,
  type WarrenEvents,
  type WarrenOptions,
} from '../../src';
import { FakeThirdParty } from '../support/fake-third-party';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';

/**
 * The function form (defineJob) end to end on the broker under test: each feature the class form has,
 * exercised through a defined job only.
 */
const topology = defineTopology({ queues: { fn: {}, stock: {}, mail: {}, clock: {} } });

const attemptsOf = new Map<string, number[]>();

const flaky = defineJob<{ failTimes: number }>(
  'fn.flaky',
  { queue: 'fn', attempts: 4, backoff: { type: 'fixed', delayMs: 100 } },
  (data, ctx) => {
    attemptsOf.set(ctx.jobId, [...(attemptsOf.get(ctx.jobId) ?? []), ctx.attempt]);
    if (ctx.attempt <= data.failTimes) throw new Error(`attempt ${ctx.attempt} fails`);
    return { attempt: ctx.attempt };
  },
);

const add = defineJob('fn.add', { queue: 'fn' }, (data: { a: number; b: number }) => ({
  sum: data.a + data.b,
}));

/** Never resolves by itself: ends when its signal aborts. */
const stuck = defineJob(
  'fn.stuck',
  { queue: 'fn', attempts: 1, timeoutMs: 300 },
  (_data: object, ctx: JobContext) =>
    new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
);

const exportFile = defineJob('fn.export', { queue: 'fn' }, async (data: { rows: number }, ctx) => {
  for (let done = 1; done <= data.rows; done++) {
    ctx.progress({ done, of: data.rows });
    await new Promise((resolve) => setTimeout(resolve, 120)); // past the 100 ms progress coalescing
  }
  return { file: `/exports/${ctx.jobId}.csv` };
});

const ticks: { jobId: string; data: unknown }[] = [];
const tick = defineJob(
  'clock.tick',
  { queue: 'clock', cron: { pattern: '* * * * * *', id: 'fn-every-second', data: { from: 'cron' } } },
  (data: { from: string }, ctx) => {
    ticks.push({ jobId: ctx.jobId, data });
  },
);

const ledger: string[] = [];
const reserve = defineJob(
  'stock.reserve',
  {
    queue: 'stock',
    activity: {
      compensate: (log) => {
        ledger.push(`released ${(log.result as { reservation: string }).reservation}`);
      },
    },
  },
  (data: { sku: string }) => {
    ledger.push(`reserved ${data.sku}`);
    return { reservation: `res-${data.sku}` };
  },
);
const charge = defineJob(
  'stock.charge',
  { queue: 'stock', attempts: 1, activity: true },
  (data: { cents: number }) => {
    if (data.cents > 1000) throw new Error('card declined');
    ledger.push(`charged ${data.cents}`);
  },
);

const apis: { mailer?: FakeThirdParty } = {};
const sendMail = defineJob(
  'mail.send',
  { queue: 'mail', attempts: 10, backoff: { type: 'fixed', delayMs: 100 }, breakers: ['mailer'] },
  (_data: object, ctx) => ctx.breaker('mailer').fire(() => apis.mailer!.call(ctx.jobId)),
);

/** A worker and a publisher-only instance of one namespace (two processes' worth). */
async function pair(handlers: object[], jobs: NonNullable<WarrenOptions['jobs']>, label: string) {
  const namespace = testNamespace(label);
  const worker = await testWarren({ namespace, topology, handlers });
  await worker.start();
  const publisher = await testWarren({
    namespace,
    topology,
    jobs,
    connection: { connectionName: `warren-test ${namespace} publisher` },
  });
  return { worker, publisher };
}

describe('defineJob on the broker', () => {
  before(async () => {
    apis.mailer = await FakeThirdParty.start();
  });
  afterEach(async () => {
    await cleanup();
    ledger.length = 0;
    ticks.length = 0;
    apis.mailer!.requests.length = 0;
    apis.mailer!.recover();
  });
  after(async () => {
    await cleanup();
    await apis.mailer!.close();
  });

  it('retries a failing defined job and hands its result to the publisher that awaits it', async () => {
    const { publisher } = await pair([flaky, add], [flaky, add], 'fn-res');
    const sum = await publisher.publishWithResult(add, { a: 2, b: 3 });
    assert.deepEqual(await sum.result({ timeoutMs: 10_000 }), { sum: 5 });

    const retried = await publisher.publishWithResult(flaky, { failTimes: 2 });
    assert.deepEqual(await retried.result({ timeoutMs: 10_000 }), { attempt: 3 });
    assert.deepEqual(attemptsOf.get(retried.jobId), [1, 2, 3]);

    const failing = await publisher.publishWithResult(flaky, { failTimes: 9 });
    const error = await failing.result({ timeoutMs: 10_000 }).then(
      () => assert.fail('should reject'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof JobResultError);
    assert.equal(error.code, 'JOB_FAILED');
    assert.deepEqual(attemptsOf.get(failing.jobId), [1, 2, 3, 4], 'its own attempts: 4');
  });

  it('times a defined job out: its signal aborts and the job is dead-lettered after its one attempt', async () => {
    const warren = await testWarren({ topology, handlers: [stuck] });
    await warren.start();
    const failed = nextEvent<WarrenEvents['failed'][0]>(warren, 'failed');
    const dead = nextEvent<WarrenEvents['deadLettered'][0]>(warren, 'deadLettered');
    const started = Date.now();
    const { jobId } = await warren.publish(stuck, {});
    const failure = await failed;
    assert.equal(failure.jobId, jobId);
    assert.ok(failure.error instanceof JobTimeoutError, `a JobTimeoutError, got ${String(failure.error)}`);
    assert.ok(Date.now() - started >= 300, 'not before its timeoutMs');
    assert.equal((await dead).jobId, jobId);
  });

  it('reports progress from a defined job and completes with its result', async () => {
    const warren = await testWarren({ topology, handlers: [exportFile] });
    await warren.start();
    const progress: unknown[] = [];
    warren.on('progress', (e) => progress.push(e.progress));
    const completed = nextEvent<WarrenEvents['completed'][0]>(warren, 'completed');
    const { jobId } = await warren.publish(exportFile, { rows: 3 });
    const done = await completed;
    assert.deepEqual(done.result, { file: `/exports/${jobId}.csv` });
    await waitFor(() => progress.length >= 3, { what: 'three progress events' });
    assert.deepEqual(progress.slice(0, 3), [
      { done: 1, of: 3 },
      { done: 2, of: 3 },
      { done: 3, of: 3 },
    ]);
  });

  it('fires the cron option of a defined job on every tick, with its data and schedule id', async () => {
    const warren = await testWarren({ topology, handlers: [tick] });
    await warren.start();
    await waitFor(() => ticks.length >= 2, { what: 'two ticks', timeoutMs: 10_000 });
    for (const { jobId, data } of ticks) {
      assert.match(jobId, /^fn-every-second@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
      assert.deepEqual(data, { from: 'cron' });
    }
    const [info] = warren.cron.list();
    assert.equal(info!.id, 'fn-every-second');
    assert.equal(info!.job, 'clock.tick');
  });

  it('runs a slip over defined activities registered once, and compensates with their compensate option', async () => {
    const warren = await testWarren({ topology, handlers: [reserve, charge] });
    await warren.start();
    const completed = nextEvent<WarrenEvents['slipCompleted'][0]>(warren, 'slipCompleted');
    const ok = await warren.slip().step(reserve, { sku: 'A1' }).step(charge, { cents: 500 }).run();
    assert.equal((await completed).slipId, ok.slipId);
    assert.deepEqual(ledger, ['reserved A1', 'charged 500']);

    ledger.length = 0;
    const compensated = nextEvent<WarrenEvents['slipCompensated'][0]>(warren, 'slipCompensated');
    const declined = await warren.slip().step(reserve, { sku: 'B2' }).step(charge, { cents: 5000 }).run();
    assert.equal((await compensated).slipId, declined.slipId);
    assert.deepEqual(ledger, ['reserved B2', 'released res-B2']);
  });

  it('opens the breaker a defined job names, postpones its jobs without spending attempts, and completes them after recovery', async () => {
    const mailer = apis.mailer!;
    mailer.goDown();
    const warren = await testWarren({
      topology,
      handlers: [sendMail],
      breakers: {
        mailer: { volumeThreshold: 1, errorThresholdPercentage: 50, resetTimeoutMs: 600, timeoutMs: 2_000 },
      },
      worker: { postponeDelayMs: 200 },
    });
    const completed: WarrenEvents['completed'][0][] = [];
    const postponed: WarrenEvents['postponed'][0][] = [];
    warren.on('completed', (e) => completed.push(e));
    warren.on('postponed', (e) => postponed.push(e));
    await warren.start();
    const ids = ['mail-1', 'mail-2', 'mail-3'];
    for (const jobId of ids) await warren.publish(sendMail, {}, { jobId });
    await nextEvent(warren, 'breakerStateChanged', (e: { state: string }) => e.state === 'open');
    // The declared breaker pauses the job's queue while it is open.
    const mailQueue = () => warren.health().consumers.find((c) => c.queue === 'mail')!;
    await waitFor(() => mailQueue().paused, { what: 'the mail queue to pause' });
    await waitFor(() => postponed.length >= 1, { what: 'a job postponed by the open breaker' });
    assert.ok(postponed.every((p) => p.breaker === 'mailer'));
    mailer.recover();
    await waitFor(() => completed.length === ids.length, { what: 'every mail sent', timeoutMs: 15_000 });
    assert.deepEqual(completed.map((c) => c.jobId).sort(), ids);
    assert.equal(mailQueue().paused, false);
  });
});
