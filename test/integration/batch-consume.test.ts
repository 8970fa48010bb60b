import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigurationError,
  defineJob,
  defineTopology,
  Job,
  MemoryIdempotencyStore,
  UnrecoverableError,
  type JobHandler,
  type WarrenEvents,
} from '../../src';

type BatchJob<T> = JobHandler.BatchJob<T>;
type BatchContext = JobHandler.BatchContext;
import { warrenMetrics } from '../../src/observability';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';

/**
 * Batch consume (`@Job({ batch })`, docs/guide/batch-and-debounce.md) on the broker under test: batches by
 * size and by wait, each job's own outcome, a throw that fails the batch by the retry policy, timeouts,
 * idempotency, the events that count jobs, and the configurations createWarren refuses.
 */
const topology = defineTopology({ queues: { rows: {}, other: {} } });

type Row = { readonly n: number };
const calls: { readonly sizes: number[]; readonly rows: number[][]; attempts: Map<number, number[]> } = {
  sizes: [],
  rows: [],
  attempts: new Map(),
};
afterEach(async () => {
  await cleanup();
  calls.sizes.length = 0;
  calls.rows.length = 0;
  calls.attempts.clear();
});

function record(jobs: readonly BatchJob<Row>[]): void {
  calls.sizes.push(jobs.length);
  calls.rows.push(jobs.map((j) => j.data.n));
  for (const job of jobs)
    calls.attempts.set(job.data.n, [...(calls.attempts.get(job.data.n) ?? []), job.attempt]);
}

const insertRows = defineJob(
  'rows.insert',
  { queue: 'rows', batch: { size: 10, timeoutMs: 300 } },
  (jobs: readonly BatchJob<Row>[]) => {
    record(jobs);
    for (const job of jobs) job.complete({ stored: job.data.n });
  },
);

/** Odd rows fail alone; a row of 1000 is unrecoverable (straight to dead letters). */
const pickyRows = defineJob(
  'rows.picky',
  {
    queue: 'rows',
    attempts: 2,
    backoff: { type: 'fixed', delayMs: 100 },
    batch: { size: 4, timeoutMs: 200 },
  },
  (jobs: readonly BatchJob<Row>[]) => {
    record(jobs);
    for (const job of jobs) {
      if (job.data.n === 1000) job.fail(new UnrecoverableError('row 1000 is never valid'));
      else if (job.data.n % 2 === 1) job.fail(new Error(`row ${job.data.n} is odd`));
    }
  },
);

let throwsLeft = 0;
/** Throws while `throwsLeft` > 0: the whole batch fails and every job retries by its policy. */
const flakyRows = defineJob(
  'rows.flaky',
  {
    queue: 'rows',
    attempts: 3,
    backoff: { type: 'fixed', delayMs: 100 },
    batch: { size: 3, timeoutMs: 200 },
  },
  (jobs: readonly BatchJob<Row>[]) => {
    record(jobs);
    if (throwsLeft-- > 0) throw new Error('database unreachable');
  },
);

/** Never ends by itself: the batch times out through its signal. */
const stuckRows = defineJob(
  'rows.stuck',
  { queue: 'rows', attempts: 1, timeoutMs: 300, batch: { size: 2, timeoutMs: 100 } },
  (jobs: readonly BatchJob<Row>[], ctx: BatchContext) => {
    record(jobs);
    return new Promise((_resolve, reject) =>
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
    );
  },
);

/** Writes through the `db` breaker; the database is down while `database.down` is true. */
const database = { down: false, failedFor: [] as string[] };
const guardedRows = defineJob(
  'rows.guarded',
  {
    queue: 'rows',
    attempts: 5,
    backoff: { type: 'fixed', delayMs: 100 },
    breakers: ['db'],
    batch: { size: 3, timeoutMs: 200 },
  },
  async (jobs: readonly BatchJob<Row>[], ctx: BatchContext) => {
    record(jobs);
    await ctx.breaker('db').fire(async () => {
      if (!database.down) return;
      database.failedFor.push(...jobs.map((j) => j.jobId));
      throw new Error('database unreachable');
    });
  },
);

@Job('rows.classy', { queue: 'other', batch: { size: 5, timeoutMs: 150 } })
class ClassyRows implements JobHandler.Batch<{ id: string }> {
  readonly seen: string[] = [];
  handleBatch(jobs: readonly BatchJob<{ id: string }>[], ctx: BatchContext) {
    this.seen.push(`${ctx.name}@${ctx.queue}:${jobs.map((j) => j.data.id).join(',')}`);
  }
}

async function worker(handlers: object[], extra: Parameters<typeof testWarren>[0] = {}) {
  const warren = await testWarren({ namespace: testNamespace('batch'), topology, handlers, ...extra });
  await warren.start();
  return warren;
}

describe('batch consume on the broker', () => {
  it('runs full batches of size, and what the broker holds beyond them after timeoutMs', async () => {
    const warren = await worker([insertRows]);
    const settled: WarrenEvents['batchSettled'][0][] = [];
    warren.on('batchSettled', (e) => settled.push(e));
    // a publish with results awaits each job's own result
    const handles = await Promise.all(
      Array.from({ length: 25 }, (_, n) => warren.publishWithResult(insertRows, { n })),
    );
    const results = await Promise.all(handles.map((h) => h.result({ timeoutMs: 10_000 })));
    assert.deepEqual(
      results,
      Array.from({ length: 25 }, (_, n) => ({ stored: n })),
    );
    assert.deepEqual(
      calls.rows.flat().sort((a, b) => a - b),
      Array.from({ length: 25 }, (_, n) => n),
    );
    assert.ok(
      calls.sizes.every((s) => s <= 10),
      `no batch over size: ${calls.sizes}`,
    );
    assert.ok(calls.sizes.filter((s) => s === 10).length >= 2, `two full batches at least: ${calls.sizes}`);
    await waitFor(() => settled.reduce((n, e) => n + e.size, 0) === 25, { what: 'batchSettled for 25 jobs' });
    assert.ok(settled.every((e) => e.failed === 0 && e.name === 'rows.insert' && e.queue === 'rows'));
  });

  it('counts jobs and batches in the metrics: each job in the job counters, each call in warren_batch_size', async () => {
    const metrics = warrenMetrics({ queueDepthCacheMs: 0 });
    const warren = await worker([insertRows], { instrumentation: metrics });
    await warren.publishMany(Array.from({ length: 10 }, (_, n) => ({ job: insertRows, data: { n } })));
    await waitFor(() => calls.rows.flat().length === 10, { what: 'ten rows' });
    const text = await waitFor(
      async () => {
        const scraped = await metrics.metrics();
        return /warren_jobs_completed_total\{job="rows.insert",queue="rows"\} 10/.test(scraped)
          ? scraped
          : undefined;
      },
      { what: 'ten completions counted' },
    );
    assert.match(text, /warren_batch_size_count\{job="rows.insert",queue="rows"\} 1\b/);
    assert.match(text, /warren_batch_size_sum\{job="rows.insert",queue="rows"\} 10\b/);
    assert.match(text, /warren_batch_duration_seconds_count\{job="rows.insert",queue="rows"\} 1\b/);
  });

  it('runs a lone job once the batch timeout passes, not sooner', async () => {
    const warren = await worker([insertRows]);
    const completed = nextEvent<WarrenEvents['completed'][0]>(warren, 'completed');
    const settled = nextEvent<WarrenEvents['batchSettled'][0]>(warren, 'batchSettled');
    await warren.publish(insertRows, { n: 7 });
    const batch = await settled;
    await completed;
    assert.equal(batch.size, 1);
    assert.ok(batch.waitedMs >= 290, `the lone job waited the batch timeout (waited ${batch.waitedMs} ms)`);
    assert.deepEqual(calls.rows, [[7]]);
  });

  it('retries or dead-letters the jobs the handler failed, alone, and acks the rest', async () => {
    const warren = await worker([pickyRows]);
    const dead: WarrenEvents['deadLettered'][0][] = [];
    const completed = new Set<string>();
    warren.on('deadLettered', (e) => dead.push(e));
    warren.on('completed', (e) => completed.add(e.jobId));
    for (const n of [2, 3, 4, 1000]) await warren.publish(pickyRows, { n }, { jobId: `row-${n}` });
    await waitFor(() => dead.length === 2, { timeoutMs: 10_000, what: 'two dead letters' });
    assert.deepEqual([...completed].sort(), ['row-2', 'row-4']);
    assert.deepEqual(dead.map((d) => [d.jobId, d.reason]).sort(), [
      ['row-1000', 'unrecoverable'],
      ['row-3', 'attempts-exhausted'],
    ]);
    // the odd row ran twice (its own two attempts); the good rows and the unrecoverable one once
    assert.deepEqual(calls.attempts.get(3), [1, 2]);
    assert.deepEqual(calls.attempts.get(2), [1]);
    assert.deepEqual(calls.attempts.get(1000), [1]);
  });

  it('fails every job of a batch that throws, each retried by its retry policy', async () => {
    throwsLeft = 1;
    const warren = await worker([flakyRows]);
    const retried: string[] = [];
    const completed: string[] = [];
    warren.on('retried', (e) => retried.push(e.jobId));
    warren.on('completed', (e) => completed.push(e.jobId));
    await warren.publishMany(
      [0, 1, 2].map((n) => ({ job: flakyRows, data: { n }, options: { jobId: `f-${n}` } })),
    );
    await waitFor(() => completed.length === 3, { timeoutMs: 10_000, what: 'three completions' });
    assert.deepEqual(retried.sort(), ['f-0', 'f-1', 'f-2']);
    for (const n of [0, 1, 2]) assert.deepEqual(calls.attempts.get(n), [1, 2]);
  });

  it('times a batch out as a whole: its signal aborts and each job fails by its own policy', async () => {
    const warren = await worker([stuckRows]);
    const failed: WarrenEvents['failed'][0][] = [];
    warren.on('failed', (e) => failed.push(e));
    const dead = new Set<string>();
    warren.on('deadLettered', (e) => dead.add(e.jobId));
    await warren.publishMany(
      [1, 2].map((n) => ({ job: stuckRows, data: { n }, options: { jobId: `s-${n}` } })),
    );
    await waitFor(() => dead.size === 2, { timeoutMs: 10_000, what: 'both stuck jobs dead-lettered' });
    assert.equal(failed.length, 2);
    for (const f of failed) assert.equal((f.error as Error).name, 'JobTimeoutError');
  });

  it('postpones every job of a batch that meets its open breaker, spending none of their attempts', async () => {
    database.down = true;
    database.failedFor.length = 0;
    const warren = await worker([guardedRows], {
      breakers: {
        db: { volumeThreshold: 1, errorThresholdPercentage: 50, resetTimeoutMs: 600, timeoutMs: 2_000 },
      },
      worker: { postponeDelayMs: 200 },
    });
    const postponed: WarrenEvents['postponed'][0][] = [];
    const completed: WarrenEvents['completed'][0][] = [];
    const dead: string[] = [];
    warren.on('postponed', (e) => postponed.push(e));
    warren.on('completed', (e) => completed.push(e));
    warren.on('deadLettered', (e) => dead.push(e.jobId));
    // a full batch of 3 runs at once, fails at the database and opens the breaker (its queue pauses); the
    // other 2 jobs, already delivered, run as a batch when its 200 ms wait ends and meet the breaker open
    await warren.publishMany(
      [0, 1, 2, 3, 4].map((n) => ({ job: guardedRows, data: { n }, options: { jobId: `g-${n}` } })),
    );
    await waitFor(() => new Set(postponed.map((e) => e.jobId)).size === 2, {
      timeoutMs: 10_000,
      what: 'both jobs of the refused batch postponed',
    });
    database.down = false;
    await waitFor(() => completed.length === 5, { timeoutMs: 15_000, what: 'five completions' });
    assert.deepEqual(dead, []);
    assert.ok(
      postponed.every((e) => e.breaker === 'db' && e.queue === 'rows'),
      JSON.stringify(postponed),
    );
    // only the calls that reached the database and failed spent an attempt; the open breaker's refusals did not
    assert.ok(database.failedFor.length > 0, 'the database failed first');
    for (const e of completed) {
      const failures = database.failedFor.filter((id) => id === e.jobId).length;
      assert.equal(
        e.attempt,
        1 + failures,
        `${e.jobId}: attempt ${e.attempt} after ${failures} failed calls`,
      );
    }
  });

  it('runs a @Job class handleBatch with the batch context, and skips jobs an idempotency store saw', async () => {
    const handler = new ClassyRows();
    const idempotency = new MemoryIdempotencyStore();
    const warren = await worker([handler], { idempotency });
    const completed: string[] = [];
    warren.on('completed', (e) => completed.push(e.jobId));
    const duplicates: string[] = [];
    warren.on('duplicate', (e) => duplicates.push(e.jobId));
    for (const id of ['a', 'b', 'c']) await warren.publish(ClassyRows, { id }, { jobId: id });
    await waitFor(() => completed.length === 3, { what: 'three completions' });
    await warren.publish(ClassyRows, { id: 'b' }, { jobId: 'b' }); // the same job id again
    await waitFor(() => duplicates.length === 1, { what: 'the duplicate acked unrun' });
    assert.deepEqual(handler.seen, ['rows.classy@other:a,b,c']);
  });

  it('refuses at createWarren a batch the prefetch cannot hold, a batch with isolate or on a queue with fairness, and bad batch options', async () => {
    const namespace = testNamespace('batch-bad');
    const make = (options: object) => {
      const job = defineJob('rows.bad', { queue: 'rows', ...options } as never, () => undefined);
      return testWarren({ namespace, topology, handlers: [job] });
    };
    await assert.rejects(make({ concurrency: 5, batch: { size: 10 } }), (e: unknown) => {
      assert.ok(e instanceof ConfigurationError);
      assert.match(
        e.message,
        /concurrency \(the prefetch of queue 'rows', 5\) is below its batch\.size \(10\)/,
      );
      return true;
    });
    await assert.rejects(
      make({ isolate: 'thread', processor: '/nowhere.js', batch: { size: 10 } }),
      /sets both batch and isolate: an isolate runs one job at a time/,
    );
    await assert.rejects(make({ batch: { size: 0 } }), /batch\.size must be an integer >= 1 \(got 0\)/);
    await assert.rejects(make({ batch: { size: 10, wait: 5 } }), /batch.*wait/);
    await assert.rejects(
      make({ timeoutMs: 29 * 60_000, batch: { timeoutMs: 60_000 } }),
      /below the broker's consumer_timeout/,
    );
    // fair share schedules one job at a time across the lanes: a batch job on its queue is refused
    const fairJob = defineJob('rows.fair', { queue: 'rows', batch: { size: 10 } }, () => undefined);
    await assert.rejects(
      testWarren({ namespace, topology: { queues: { rows: { fairness: true } } }, handlers: [fairJob] }),
      (e: unknown) =>
        e instanceof ConfigurationError &&
        /queue 'rows' has fairness: fair share schedules deliveries across the lanes one job at a time/.test(
          e.message,
        ),
    );
  });
});
