/**
 * The outbox benchmark's scenarios, each on a warren of its own namespace against the local broker
 * and PostgreSQL (no consumer: messages wait in the queue, deleted at the end):
 *   steady     jobs at a steady rate, one transaction per job; commit-to-confirm latency (COMMIT returned
 *              → the relay's `outboxRelayed` event, i.e. confirmed and the row deleted), beside direct
 *              publish at the same rate (publish called → confirmed)
 *   drain      a backlog of N rows (inserted by one SQL statement) drained by one relay, beside N direct
 *              publishes with 1,000 in flight
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import { createWarren, defineTopology, Job, type Warren } from '../../src';
import { percentile, sortedCopy } from '../lib/stats';

export const outboxBenchTopology = defineTopology({ queues: { bench: {} } });

@Job('bench.outbox', { queue: 'bench' })
export class OutboxBenchJob {
  async handle(): Promise<void> {}
}

const BODY = { userId: 'u-000000', template: 'welcome', locale: 'en-GB' };

export interface BenchEnv {
  readonly amqpUrl: string;
  readonly pool: Pool;
}

export interface LatencyFigures {
  readonly jobs: number;
  readonly jobsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface DrainFigures {
  readonly jobs: number;
  readonly seconds: number;
  readonly jobsPerSecond: number;
}

/** A warren on a fresh namespace (and outbox table); `dispose` deletes its queues and table. */
export async function benchWarren(
  env: BenchEnv,
  relay: boolean | { batchSize: number },
  id = randomBytes(4).toString('hex'),
) {
  const table = `warren_outbox_bench_${id}`;
  const warren = await createWarren({
    url: env.amqpUrl,
    namespace: `bench-outbox-${id}`,
    topology: outboxBenchTopology,
    jobs: [OutboxBenchJob],
    queues: { expiresMs: 30 * 60_000 },
    outbox: { pool: env.pool, tableName: table, relay },
  });
  return {
    warren,
    table,
    async dispose(): Promise<void> {
      await warren.deleteTopology();
      await warren.close();
      await env.pool.query(`DROP TABLE IF EXISTS "${table}"`);
    },
  };
}

/** Calls `start(i)` for job i at `rate` per second for `seconds`, every 10 ms; resolves when all settled. */
async function atSteadyRate(
  rate: number,
  seconds: number,
  start: (i: number) => Promise<void>,
): Promise<number> {
  const total = rate * seconds;
  const began = performance.now();
  const running: Promise<void>[] = [];
  let issued = 0;
  while (issued < total) {
    const due = Math.min(total, Math.floor(((performance.now() - began) / 1000) * rate) + 1);
    for (; issued < due; issued++) running.push(start(issued));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await Promise.all(running);
  return total / ((performance.now() - began) / 1000);
}

function figures(latencies: number[], jobsPerSecond: number): LatencyFigures {
  const sorted = sortedCopy(latencies);
  return {
    jobs: latencies.length,
    jobsPerSecond: Math.round(jobsPerSecond),
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted[sorted.length - 1] ?? NaN),
  };
}

/** Direct `warren.publish` at a steady rate: call → confirm. */
export async function steadyDirect(warren: Warren, rate: number, seconds: number): Promise<LatencyFigures> {
  const latencies: number[] = [];
  const achieved = await atSteadyRate(rate, seconds, async () => {
    const t0 = performance.now();
    await warren.publish(OutboxBenchJob, BODY);
    latencies.push(performance.now() - t0);
  });
  return figures(latencies, achieved);
}

/** One transaction per job through the outbox at a steady rate: COMMIT returned → confirmed and deleted. */
export async function steadyOutbox(
  env: BenchEnv,
  warren: Warren,
  rate: number,
  seconds: number,
): Promise<LatencyFigures & { commitP50Ms: number; commitP99Ms: number }> {
  const committedAt = new Map<string, number>();
  const relayedAt = new Map<string, number>();
  warren.on('outboxRelayed', ({ jobIds }) => {
    const now = performance.now();
    for (const jobId of jobIds) relayedAt.set(jobId, now);
  });
  const commits: number[] = [];
  const achieved = await atSteadyRate(rate, seconds, async (i) => {
    const client = await env.pool.connect();
    try {
      const t0 = performance.now();
      await client.query('BEGIN');
      await warren.outbox.publish(client, OutboxBenchJob, BODY, { jobId: `steady-${i}` });
      await client.query('COMMIT');
      const now = performance.now();
      committedAt.set(`steady-${i}`, now);
      commits.push(now - t0);
    } finally {
      client.release();
    }
  });
  const deadline = Date.now() + 60_000;
  while (relayedAt.size < committedAt.size && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  // A batch may be relayed in the moment between COMMIT and its `then`: count that as 0, not negative.
  const latencies = [...committedAt].map(([id, at]) => Math.max(0, (relayedAt.get(id) ?? Infinity) - at));
  const sortedCommits = sortedCopy(commits);
  return {
    ...figures(latencies, achieved),
    commitP50Ms: round(percentile(sortedCommits, 50)),
    commitP99Ms: round(percentile(sortedCommits, 99)),
  };
}

/** Inserts `jobs` rows in one statement, then times one relay draining them. */
export async function drainOutbox(env: BenchEnv, batchSize: number, jobs: number): Promise<DrainFigures> {
  const id = randomBytes(4).toString('hex');
  const writer = await benchWarren(env, false, id);
  await env.pool.query(
    `INSERT INTO "${writer.table}" (job_id, job_name, payload)
     SELECT 'drain-' || n, 'bench.outbox', $1::json FROM generate_series(1, $2) AS n`,
    [JSON.stringify(BODY), jobs],
  );
  await writer.warren.close();
  const began = performance.now();
  let relayed = 0;
  let done: () => void = () => undefined;
  const drained = new Promise<void>((resolve) => {
    done = resolve;
  });
  const relay = await benchWarren(env, { batchSize }, id);
  relay.warren.on('outboxRelayed', ({ jobIds }) => {
    relayed += jobIds.length;
    if (relayed >= jobs) done();
  });
  await drained;
  const seconds = (performance.now() - began) / 1000;
  await relay.dispose();
  return { jobs, seconds: round(seconds), jobsPerSecond: Math.round(jobs / seconds) };
}

/** `jobs` direct publishes with `inFlight` awaiting their confirm at any time. */
export async function drainDirect(warren: Warren, jobs: number, inFlight: number): Promise<DrainFigures> {
  const began = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < jobs) {
        next++;
        await warren.publish(OutboxBenchJob, BODY);
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  return { jobs, seconds: round(seconds), jobsPerSecond: Math.round(jobs / seconds) };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
