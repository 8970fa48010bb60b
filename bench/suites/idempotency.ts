/**
 * What an idempotency store costs: jobs/s of one worker draining a prefilled queue of no-op jobs,
 * without a store, with the memory store and with the PostgreSQL store (a claim and a completion,
 * one round trip each, per job). Variants alternate within each round so drift on a shared machine
 * hits them alike.
 *
 *   npm run bench -- idempotency [--jobs 5000] [--concurrency 20] [--rounds 3]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672), PG_URL (default
 * postgres://postgres@127.0.0.1:5432/test)
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Pool } from 'pg';
import {
  createWarren,
  defineTopology,
  Job,
  MemoryIdempotencyStore,
  PostgresIdempotencyStore,
  type IdempotencyStore,
  type JobHandler,
  type Warren,
} from '../../src';
import { planOf } from '../../src/warren';
import { deletePlan } from '../lib/warren-drain';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
  },
});
const JOBS = Number(values.jobs);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const PG_URL = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const topology = defineTopology({ queues: { bench: {} } });

@Job('bench.noop', { queue: 'bench', concurrency: CONCURRENCY, attempts: 1 })
class NoopJob implements JobHandler<{ n: number }> {
  handle() {}
}

/**
 * `postgres-async`: the same store on a pool whose sessions run with synchronous_commit=off (see the README).
 */
type Variant = 'none' | 'memory' | 'postgres' | 'postgres-async';

async function runOnce(
  variant: Variant,
  pools: { sync: Pool; async: Pool },
): Promise<{ jobsPerSecond: number; duplicates: number }> {
  const suffix = randomBytes(4).toString('hex');
  const table = `warren_idem_bench_${suffix}`;
  let store: IdempotencyStore | undefined;
  if (variant === 'memory') store = new MemoryIdempotencyStore();
  if (variant === 'postgres') store = new PostgresIdempotencyStore({ pool: pools.sync, tableName: table });
  if (variant === 'postgres-async')
    store = new PostgresIdempotencyStore({ pool: pools.async, tableName: table });
  let warren: Warren | undefined;
  try {
    const running = await createWarren({
      url: AMQP_URL,
      namespace: `bench-idem-${suffix}`,
      topology,
      handlers: [new NoopJob()],
      // A safety net only: every run deletes what it declared.
      queues: { expiresMs: 5 * 60_000 },
      delay: { levels: 8 },
      ...(store ? { idempotency: store } : {}),
    });
    warren = running;
    for (let i = 0; i < JOBS; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, JOBS - i) }, (_, k) =>
          running.publish(NoopJob, { n: i + k }, { jobId: `job-${i + k}` }),
        ),
      );
    }
    let completed = 0;
    let duplicates = 0;
    const done = new Promise<void>((resolve) => {
      running.on('completed', () => {
        if (++completed === JOBS) resolve();
      });
    });
    running.on('duplicate', () => duplicates++);
    const started = process.hrtime.bigint();
    await running.start();
    await done;
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return { jobsPerSecond: JOBS / seconds, duplicates };
  } finally {
    if (warren) {
      await warren.close();
      // After close: deleting queues under live consumers would make them re-declare the topology.
      await deletePlan(AMQP_URL, planOf(warren));
    }
    if (store instanceof PostgresIdempotencyStore) await pools.sync.query(`DROP TABLE IF EXISTS "${table}"`);
  }
}

async function main(): Promise<void> {
  const pools = {
    sync: new Pool({ connectionString: PG_URL, max: CONCURRENCY }),
    async: new Pool({ connectionString: PG_URL, max: CONCURRENCY, options: '-c synchronous_commit=off' }),
  };
  const variants: Variant[] = ['none', 'memory', 'postgres', 'postgres-async'];
  const results = new Map<Variant, number[]>(variants.map((v) => [v, []]));
  try {
    console.log(
      `idempotency overhead: ${JOBS} no-op jobs per run, concurrency ${CONCURRENCY}, ${ROUNDS} rounds, quorum queue`,
    );
    for (let round = 1; round <= ROUNDS; round++) {
      for (const variant of variants) {
        const { jobsPerSecond, duplicates } = await runOnce(variant, pools);
        if (duplicates > 0) throw new Error(`${variant}: ${duplicates} unexpected duplicates`);
        results.get(variant)!.push(jobsPerSecond);
        console.log(`  round ${round} ${variant.padEnd(14)} ${jobsPerSecond.toFixed(0).padStart(6)} jobs/s`);
      }
    }
  } finally {
    await pools.sync.end();
    await pools.async.end();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const base = median(results.get('none')!);
  console.log('\n| store | median jobs/s | min–max | vs none |\n| --- | --- | --- | --- |');
  for (const variant of variants) {
    const xs = results.get(variant)!;
    const m = median(xs);
    console.log(
      `| ${variant} | ${m.toFixed(0)} | ${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)} | ${variant === 'none' ? '—' : `${(((m - base) / base) * 100).toFixed(0)} %`} |`,
    );
  }
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
