/**
 * Batch consume and debounce (issue 36, docs/guide/batch-and-debounce.md), beside the plain job in one run:
 *
 * - batch: a PostgreSQL insert handler, one multi-row INSERT per batch (`batch: { size 100 }`), against the
 *   same rows inserted one per job, both at concurrency (prefetch) 100 on one pool; then the latency a lone
 *   job gains from waiting for its batch (publish → handler, median of `--lone` jobs, beside the plain job).
 * - debounce: `--updates` debounced updates of one key from 3 publisher processes, then one final update:
 *   how many runs and with which payload; the cost of a debounced publish beside a plain one; a steady
 *   stream with `maxWaitMs`: runs per `maxWaitMs`.
 *
 *   npm run bench -- batch-and-debounce [--jobs 20000] [--rounds 3] [--lone 20] [--updates 10000]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672), PG_URL (default postgres://postgres@127.0.0.1:5432/test)
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Pool } from 'pg';
import { createWarren, defineJob, defineTopology, type JobHandler, type Warren } from '../../src';
import { testWarrenOptions } from '../../src/testing';
import { planOf } from '../../src/warren';
import { ChildWorkers } from '../../test/fixtures/child-workers';
import {
  debounceTopology,
  reindexJob,
  type PublisherMessage,
  type ReindexData,
} from '../../test/fixtures/debounce-jobs';
import { deletePlan } from '../lib/warren-drain';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    lone: { type: 'string', default: '20' },
    updates: { type: 'string', default: '10000' },
    only: { type: 'string', default: 'batch,debounce' },
  },
});
const JOBS = Number(values.jobs);
const ROUNDS = Number(values.rounds);
const LONE = Number(values.lone);
const UPDATES = Number(values.updates);
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const PG_URL = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CONCURRENCY = 100;
const BATCH = { size: 100, timeoutMs: 100 } as const;

type Row = { readonly n: number; readonly at: number };
const topology = defineTopology({ queues: { rows: {} } });
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: readonly number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;

/** The two handlers, over one table: the plain job inserts its row, the batch job its batch's rows at once. */
function handlers(pool: Pool, table: string, onRow: (row: Row) => void) {
  const single = defineJob(
    'rows.single',
    { queue: 'rows', concurrency: CONCURRENCY, attempts: 1 },
    async (data: Row) => {
      await pool.query(`INSERT INTO "${table}" (n, at) VALUES ($1, $2)`, [data.n, data.at]);
      onRow(data);
    },
  );
  const batch = defineJob(
    'rows.batch',
    { queue: 'rows', concurrency: CONCURRENCY, attempts: 1, batch: BATCH },
    async (jobs: readonly JobHandler.BatchJob<Row>[]) => {
      const params = jobs.flatMap((j) => [j.data.n, j.data.at]);
      const rows = jobs.map((_, i) => `($${2 * i + 1}, $${2 * i + 2})`).join(', ');
      await pool.query(`INSERT INTO "${table}" (n, at) VALUES ${rows}`, params);
      for (const job of jobs) onRow(job.data);
    },
  );
  // concurrency left to its default for a batch job: twice the size, one batch running while the next fills
  const pipelined = defineJob(
    'rows.batch',
    { queue: 'rows', attempts: 1, batch: BATCH },
    batch.handleBatch as NonNullable<typeof batch.handleBatch>,
  );
  return { single, batch, pipelined };
}

type Variant = 'single' | 'batch' | 'pipelined';
const VARIANTS: readonly Variant[] = ['single', 'batch', 'pipelined'];
const LABELS: Record<Variant, string> = {
  single: 'one row per job, concurrency 100',
  batch: `batch of ${BATCH.size}, concurrency 100 (one batch at a time)`,
  pipelined: `batch of ${BATCH.size}, concurrency left to its default (${2 * BATCH.size}: two batches)`,
};

async function withWarren<T>(
  pool: Pool,
  variant: Variant,
  body: (
    warren: Warren,
    job: ReturnType<typeof handlers>['single'],
    rows: { count: number; last?: Row; ranAt: number },
  ) => Promise<T>,
): Promise<T> {
  const suffix = randomBytes(4).toString('hex');
  const table = `warren_batch_bench_${suffix}`;
  await pool.query(`CREATE TABLE "${table}" (n integer NOT NULL, at bigint NOT NULL)`);
  const rows = { count: 0, last: undefined as Row | undefined, ranAt: 0 };
  const jobs = handlers(pool, table, (row) => {
    rows.count++;
    rows.last = row;
    rows.ranAt = performance.now();
  });
  const job = jobs[variant] as unknown as typeof jobs.single;
  const warren = await createWarren({
    url: AMQP_URL,
    namespace: `bench-batch-${suffix}`,
    topology,
    handlers: [job],
    queues: { expiresMs: 10 * 60_000 },
    delay: { levels: 8 },
  });
  try {
    return await body(warren, job, rows);
  } finally {
    await warren.close();
    await deletePlan(AMQP_URL, planOf(warren));
    await pool.query(`DROP TABLE IF EXISTS "${table}"`);
  }
}

/** Rows per second draining `JOBS` prefilled jobs. */
function drain(pool: Pool, variant: Variant): Promise<number> {
  return withWarren(pool, variant, async (warren, job, rows) => {
    for (let i = 0; i < JOBS; i += 1000)
      await warren.publishMany(
        Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({ job, data: { n: i + k, at: 0 } })),
      );
    const started = performance.now();
    await warren.start();
    while (rows.count < JOBS) await new Promise((resolve) => setTimeout(resolve, 5));
    return JOBS / ((performance.now() - started) / 1000);
  });
}

/**
 * Publish → handler of `LONE` jobs one at a time on an idle worker, ms each; for a batch job also how long
 * each lone batch waited before it ran (`batchSettled.waitedMs`: from the job joining its batch to the batch
 * starting, the wait the batch adds, measured inside the worker).
 */
function loneLatencies(
  pool: Pool,
  variant: Variant,
  count: number,
): Promise<{ latencies: number[]; waited: number[] }> {
  return withWarren(pool, variant, async (warren, job, rows) => {
    const waited: number[] = [];
    warren.on('batchSettled', (e) => waited.push(e.waitedMs));
    await warren.start();
    const latencies: number[] = [];
    for (let n = 0; n < count; n++) {
      const before = rows.count;
      const sent = performance.now();
      await warren.publish(job, { n, at: Date.now() });
      while (rows.count === before) await new Promise((resolve) => setTimeout(resolve, 1));
      latencies.push(rows.ranAt - sent);
    }
    return { latencies, waited };
  });
}

async function batchPart(): Promise<void> {
  const pool = new Pool({ connectionString: PG_URL, max: 20 });
  try {
    console.log(
      `\nbatch: ${JOBS} rows per run into PostgreSQL, concurrency ${CONCURRENCY}, pool of 20, ${ROUNDS} rounds, batch ${JSON.stringify(BATCH)}; load ${loadavg()[0]!.toFixed(2)}`,
    );
    const rates: Record<Variant, number[]> = { single: [], batch: [], pipelined: [] };
    for (let round = 1; round <= ROUNDS; round++)
      for (const variant of VARIANTS) {
        const rate = await drain(pool, variant);
        rates[variant].push(rate);
        console.log(`  round ${round} ${variant.padEnd(9)} ${rate.toFixed(0).padStart(7)} rows/s`);
      }
    const lone: Record<Variant, number[]> = { single: [], batch: [], pipelined: [] };
    const waited: number[] = [];
    // the variants alternate job by job group (a fifth of LONE at a time), so the machine's drift hits them alike
    const group = Math.max(1, Math.floor(LONE / 5));
    for (let done = 0; done < LONE; done += group)
      for (const variant of VARIANTS) {
        const measured = await loneLatencies(pool, variant, Math.min(group, LONE - done));
        lone[variant].push(...measured.latencies);
        if (variant === 'batch') waited.push(...measured.waited);
      }
    console.log(
      '\n| variant | median rows/s | min–max | vs one row per job | lone job, publish → handler (median, max) |\n| --- | --- | --- | --- | --- |',
    );
    const base = median(rates.single);
    for (const variant of VARIANTS)
      console.log(
        `| ${LABELS[variant]} | ${median(rates[variant]).toFixed(0)} | ${spread(rates[variant])} | ${(median(rates[variant]) / base).toFixed(2)}× | ${median(lone[variant]).toFixed(1)} ms, ${Math.max(...lone[variant]).toFixed(1)} ms |`,
      );
    const added = median(lone.batch) - median(lone.single);
    console.log(
      `\ntarget: batch ≥ 3× one row per job; a lone job waits ${added.toFixed(1)} ms more (target ≤ timeoutMs ${BATCH.timeoutMs} + 5 ms): the difference of the medians above; inside the worker each lone batch waited ${median(waited).toFixed(1)} ms (median, ${spread(waited)} ms over ${waited.length} batches: batchSettled.waitedMs, from joining to running); load ${loadavg()[0]!.toFixed(2)}`,
    );
  } finally {
    await pool.end();
  }
}

async function debouncePart(): Promise<void> {
  const namespace = `bench-debounce-${randomBytes(4).toString('hex')}`;
  const runs: ReindexData[] = [];
  const job = reindexJob((data) => runs.push(data));
  const warren = await createWarren({
    ...testWarrenOptions({ url: AMQP_URL, namespace }),
    topology: debounceTopology,
    handlers: [job],
  });
  const children = new ChildWorkers<PublisherMessage>('debounce-publisher');
  const periodMs = 3000;
  try {
    await warren.start();
    // the cost of a publish: plain, then debounced (one key), 500 each from this process, in series
    const cost = async (options: object) => {
      const started = performance.now();
      for (let seq = 1; seq <= 500; seq++)
        await warren.publish(job, { doc: 'cost', seq, from: 'bench' }, options);
      return (performance.now() - started) / 500;
    };
    const plain = await cost({ delayMs: periodMs });
    const debounced = await cost({ debounce: { key: 'cost', periodMs } });
    console.log(
      `\ndebounce: a publish in series ${plain.toFixed(2)} ms delayed, ${debounced.toFixed(2)} ms debounced (the copy and its stream record, both confirmed); load ${loadavg()[0]!.toFixed(2)}`,
    );
    const each = Math.ceil(UPDATES / 3);
    const pubs = [1, 2, 3].map(() =>
      children.fork([AMQP_URL, namespace, 'doc', String(each), String(periodMs)]),
    );
    while (!pubs.every((p) => p.messages.some((m) => m.kind === 'ready')))
      await new Promise((r) => setTimeout(r, 20));
    const started = performance.now();
    for (const p of pubs) p.child.send('go');
    while (!pubs.every((p) => p.messages.some((m) => m.kind !== 'ready')))
      await new Promise((r) => setTimeout(r, 20));
    const failed = pubs.flatMap((p) => p.messages.filter((m) => m.kind === 'failed'));
    if (failed.length > 0) throw new Error(`a publisher failed: ${JSON.stringify(failed)}`);
    const burstMs = performance.now() - started;
    const final = performance.now();
    await warren.publish(job, { doc: 'doc', seq: 0, from: 'final' }, { debounce: { key: 'doc', periodMs } });
    while (runs.filter((r) => r.doc === 'doc').length === 0) await new Promise((r) => setTimeout(r, 5));
    const ranAfter = performance.now() - final;
    // a marker with a shorter period: every earlier copy of 'doc' came due before it
    await warren.publish(
      job,
      { doc: 'marker', seq: 1, from: 'bench' },
      { debounce: { key: 'marker', periodMs: 500 } },
    );
    while (!runs.some((r) => r.doc === 'marker')) await new Promise((r) => setTimeout(r, 5));
    const docRuns = runs.filter((r) => r.doc === 'doc');
    console.log(
      `  ${each * 3 + 1} updates of one key from 3 processes in ${burstMs.toFixed(0)} ms (${((each * 3) / (burstMs / 1000)).toFixed(0)}/s) → ${docRuns.length} run(s), payload ${JSON.stringify(docRuns.map((r) => r.from))} (target: exactly 1, 'final'), ${ranAfter.toFixed(0)} ms after the final update (periodMs ${periodMs})`,
    );
    // a steady stream with maxWaitMs: one update every 10 ms for 5 s, periodMs 500, maxWaitMs 1000
    const steady = { key: 'steady', periodMs: 500, maxWaitMs: 1000 };
    const streamStart = performance.now();
    let seq = 0;
    while (performance.now() - streamStart < 5000) {
      await warren.publish(job, { doc: 'steady', seq: ++seq, from: 'bench' }, { debounce: steady });
      await new Promise((r) => setTimeout(r, 10));
    }
    while (runs.filter((r) => r.doc === 'steady').at(-1)?.seq !== seq)
      await new Promise((r) => setTimeout(r, 5));
    const steadyRuns = runs.filter((r) => r.doc === 'steady').length;
    console.log(
      `  a steady stream of ${seq} updates over 5 s, periodMs 500, maxWaitMs 1000 → ${steadyRuns} runs (target: about one per 1000 ms, plus the last); load ${loadavg()[0]!.toFixed(2)}`,
    );
  } finally {
    for (const p of children.all) p.child.send('exit');
    await children.killAll();
    await warren.close();
    await deletePlan(AMQP_URL, planOf(warren));
  }
}

async function main(): Promise<void> {
  const only = new Set(values.only.split(','));
  if (only.has('batch')) await batchPart();
  if (only.has('debounce')) await debouncePart();
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
