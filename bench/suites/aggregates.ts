/**
 * What the queue aggregates cost a job, and how many records they write (issue 39). Three figures:
 * - the collector's own CPU per job: its instrumentation hook and outcome called in a tight loop, as the
 *   worker calls them (the ≤ 1 µs target);
 * - end to end: jobs/s and CPU µs per job of one worker draining a prefilled queue of no-op jobs at
 *   concurrency 100, without and with `aggregates` (bucket of a second, so the run spans buckets), the
 *   variants alternating within each round on the shared machine;
 * - records: the bucket stream read back after each run with aggregates, counted per process and bucket
 *   (the target: one record per process per bucket, holding each queue once).
 *
 *   npm run bench -- aggregates [--jobs 20000] [--concurrency 100] [--rounds 5] [--loop 2000000]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import { parseArgs } from 'node:util';
import { createWarren, defineTopology, Job, type JobHandler, type Warren } from '../../src';
import { BucketCollector, decodeAggregate } from '../../src/aggregates';
import type { ProcessInfo } from '../../src/core';
import { createNaming } from '../../src/topology';
import { planOf } from '../../src/warren';
import { readToEnd } from '../../src/streams';
import { median } from '../lib/stats';
import { deletePlan, drainMeasured } from '../lib/warren-drain';
import * as amqp from 'amqplib';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '5' },
    loop: { type: 'string', default: '2000000' },
  },
});
const JOBS = Number(values.jobs);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
const LOOP = Number(values.loop);
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

const topology = defineTopology({ queues: { bench: {} } });

@Job('bench.noop', { queue: 'bench', concurrency: CONCURRENCY, attempts: 1 })
class NoopJob implements JobHandler<{ n: number }> {
  handle() {}
}

/** The collector's hook and outcome for LOOP jobs over 4 queues: ns per job. */
function collectorNsPerJob(): number {
  const collector = new BucketCollector();
  const infos = ['a', 'b', 'c', 'd'].map(
    (queue): ProcessInfo => ({
      name: 'bench.noop',
      jobId: 'j',
      queue,
      queueName: queue,
      exchange: '',
      routingKey: queue,
      attempt: 1,
      enqueuedAt: Date.now() - 5,
      correlationId: undefined,
      bytes: 10,
      headers: {},
    }),
  );
  const completed = { kind: 'completed' } as const;
  for (let i = 0; i < 100_000; i++) collector.process(infos[i & 3]!).end(completed);
  const cpu = process.cpuUsage();
  for (let i = 0; i < LOOP; i++) collector.process(infos[i & 3]!).end(completed);
  const used = process.cpuUsage(cpu);
  return ((used.user + used.system) * 1000) / LOOP;
}

interface Run {
  readonly jobsPerSecond: number;
  readonly cpuUsPerJob: number;
  readonly records?: { readonly records: number; readonly buckets: number; readonly maxQueues: number };
}

async function runOnce(withAggregates: boolean): Promise<Run> {
  const namespace = `bench-aggr-${randomBytes(4).toString('hex')}`;
  let warren: Warren | undefined;
  try {
    const running = await createWarren({
      url: AMQP_URL,
      namespace,
      topology,
      handlers: [new NoopJob()],
      queues: { expiresMs: 5 * 60_000 },
      delay: { levels: 8 },
      ...(withAggregates ? { aggregates: { bucketMs: 1000 } } : {}),
    });
    warren = running;
    for (let i = 0; i < JOBS; i += 500)
      await Promise.all(
        Array.from({ length: Math.min(500, JOBS - i) }, (_, k) => running.publish(NoopJob, { n: i + k })),
      );
    const run = await drainMeasured(running, JOBS);
    if (!withAggregates) return run;
    await running.close();
    warren = undefined;
    const records = await countRecords(namespace);
    await deletePlan(AMQP_URL, planOf(running));
    return { ...run, records };
  } finally {
    if (warren) {
      await warren.close();
      await deletePlan(AMQP_URL, planOf(warren));
    }
  }
}

/** The bucket stream's records, by (process, bucket): how many, and the most queues one held. */
async function countRecords(namespace: string) {
  const connection = await amqp.connect(AMQP_URL);
  try {
    const buckets = new Set<string>();
    let records = 0;
    let maxQueues = 0;
    await readToEnd(
      () => connection.createChannel(),
      createNaming(namespace).aggregates('bucket'),
      'first',
      { idleMs: 500, prefetch: 500 },
      (r) => {
        const record = decodeAggregate(r.content);
        if (typeof record === 'string') return;
        records += 1;
        buckets.add(`${record.p} ${record.s}`);
        maxQueues = Math.max(maxQueues, Object.keys(record.q).length);
      },
    );
    return { records, buckets: buckets.size, maxQueues };
  } finally {
    await connection.close();
  }
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function main(): Promise<void> {
  console.log(
    `aggregates: ${JOBS} no-op jobs per run, concurrency ${CONCURRENCY}, ${ROUNDS} rounds; load ${load()}`,
  );
  const loops = [collectorNsPerJob(), collectorNsPerJob(), collectorNsPerJob()];
  console.log(
    `  collector alone: ${loops.map((ns) => ns.toFixed(0)).join(', ')} ns CPU per job (${LOOP} jobs each)`,
  );
  const off: Run[] = [];
  const on: Run[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const variant of round % 2 ? [false, true] : [true, false]) {
      const run = await runOnce(variant);
      (variant ? on : off).push(run);
      const records = run.records
        ? `  ${run.records.records} records for ${run.records.buckets} (process, bucket) pairs, ≤ ${run.records.maxQueues} queue each`
        : '';
      console.log(
        `  round ${round} ${(variant ? 'aggregates' : 'off').padEnd(10)} ${run.jobsPerSecond.toFixed(0).padStart(6)} jobs/s  ${run.cpuUsPerJob.toFixed(1).padStart(6)} CPU µs/job${records}`,
      );
    }
  }
  const rate = (rs: Run[]) => median(rs.map((r) => r.jobsPerSecond));
  const cpu = (rs: Run[]) => median(rs.map((r) => r.cpuUsPerJob));
  const spread = (rs: Run[]) =>
    `${Math.min(...rs.map((r) => r.cpuUsPerJob)).toFixed(1)}–${Math.max(...rs.map((r) => r.cpuUsPerJob)).toFixed(1)}`;
  console.log(
    `median: off ${rate(off).toFixed(0)} jobs/s ${cpu(off).toFixed(1)} µs/job (${spread(off)}); aggregates ${rate(on).toFixed(0)} jobs/s ` +
      `${cpu(on).toFixed(1)} µs/job (${spread(on)}); CPU ${(cpu(on) - cpu(off)).toFixed(1)} µs/job; collector alone ` +
      `${median(loops).toFixed(0)} ns/job; load ${load()}`,
  );
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
