/**
 * What metrics and traces cost (issue 17): CPU µs per job and jobs/s of one process, for consuming a
 * prefilled queue of no-op jobs at concurrency 100 and for publishing with 100 callers each awaiting its
 * own confirm. Variants: none, metrics (prom-client), tracing (every span sampled, spans to a no-op
 * exporter through the SDK's BatchSpanProcessor, as a production setup would), and all (metrics + tracing + the memory idempotency
 * store). Variants alternate within each round, their order rotating from round to round, so drift on a
 * shared machine hits them alike; the figures to read are the ratios to `none` within this one run.
 *
 *   npm run bench -- observability [--jobs 20000] [--rounds 5] [--concurrency 100]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import * as amqp from 'amqplib';
import { Registry } from 'prom-client';
import {
  createWarren,
  defineTopology,
  Job,
  MemoryIdempotencyStore,
  type JobHandler,
  type Warren,
  type WarrenOptions,
} from '../../src';
import type { Instrumentation } from '../../src/observability';
import type { TopologyPlan } from '../../src/ops';
import { warrenMetrics, warrenTracing } from '../../src/observability';
import { runCallers } from '../lib/callers';
import { noopTracerProvider } from '../lib/noop-tracing';
import { planOf } from '../../src/warren';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '100' },
  },
});
const JOBS = Number(values.jobs);
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency);
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

const topology = defineTopology({ queues: { bench: {} } });

@Job('bench.noop', { queue: 'bench', concurrency: CONCURRENCY, attempts: 1 })
class NoopJob implements JobHandler<{ n: number }> {
  handle() {}
}

type Variant = 'none' | 'metrics' | 'tracing' | 'all';
const VARIANTS: Variant[] = ['none', 'metrics', 'tracing', 'all'];
type Measure = 'consume' | 'publish';

const provider = noopTracerProvider();

function optionsOf(variant: Variant): Partial<WarrenOptions> {
  const metrics = () => warrenMetrics({ registry: new Registry() });
  const tracing = () => warrenTracing({ tracerProvider: provider });
  const instrumentation: Instrumentation[] = [];
  if (variant === 'metrics' || variant === 'all') instrumentation.push(metrics());
  if (variant === 'tracing' || variant === 'all') instrumentation.push(tracing());
  return {
    ...(instrumentation.length > 0 ? { instrumentation } : {}),
    ...(variant === 'all' ? { idempotency: new MemoryIdempotencyStore() } : {}),
  };
}

interface Figures {
  jobsPerSecond: number;
  cpuMicrosPerJob: number;
}

async function runOnce(variant: Variant, measure: Measure): Promise<Figures> {
  const suffix = randomBytes(4).toString('hex');
  let warren: Warren | undefined;
  try {
    const running = await createWarren({
      url: AMQP_URL,
      namespace: `bench-obs-${suffix}`,
      topology,
      handlers: [new NoopJob()],
      queues: { expiresMs: 5 * 60_000 },
      delay: { levels: 8 },
      ...optionsOf(variant),
    });
    warren = running;
    const publish = (i: number) => running.publish(NoopJob, { n: i }).then(() => undefined);
    if (measure === 'publish') {
      return await timed(() => runCallers(100, JOBS, publish));
    }
    await runCallers(500, JOBS, publish);
    let completed = 0;
    const done = new Promise<void>((resolve) => {
      running.on('completed', () => {
        if (++completed === JOBS) resolve();
      });
    });
    return await timed(async () => {
      await running.start();
      await done;
    });
  } finally {
    if (warren) {
      await warren.close();
      await deletePlan(planOf(warren));
    }
  }
}

async function timed(work: () => Promise<void>): Promise<Figures> {
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await work();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  return { jobsPerSecond: JOBS / seconds, cpuMicrosPerJob: (used.user + used.system) / JOBS };
}

/** Deletes what a run declared; a broker hiccup here must not end the whole run (it is logged). */
async function deletePlan(plan: TopologyPlan): Promise<void> {
  const connection = await amqp.connect(AMQP_URL);
  connection.on('error', (error: unknown) => console.error('cleanup connection error', error));
  try {
    for (const queue of plan.queues) {
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      await channel.deleteQueue(queue.name).catch(() => undefined);
      await channel.close().catch(() => undefined);
    }
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    for (const exchange of plan.exchanges) await channel.deleteExchange(exchange.name).catch(() => undefined);
    await channel.close().catch(() => undefined);
  } finally {
    await connection.close().catch(() => undefined);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  console.log(
    `observability overhead: ${JOBS} no-op jobs per run, consume at concurrency ${CONCURRENCY}, publish with ` +
      `100 callers, ${ROUNDS} rounds; load average at start ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  const results = new Map<string, Figures[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round - 1) % VARIANTS.length]!);
    for (const measure of ['consume', 'publish'] as const) {
      for (const variant of order) {
        const figures = await runOnce(variant, measure);
        const key = `${measure} ${variant}`;
        results.set(key, [...(results.get(key) ?? []), figures]);
        console.log(
          `  round ${round} ${key.padEnd(16)} ${figures.jobsPerSecond.toFixed(0).padStart(6)} jobs/s ` +
            `${figures.cpuMicrosPerJob.toFixed(1).padStart(6)} µs CPU/job`,
        );
      }
    }
  }
  console.log(
    `\nload average at end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    '\n| path | variant | median jobs/s | vs none | median CPU µs/job | vs none |\n| --- | --- | --- | --- | --- | --- |',
  );
  for (const measure of ['consume', 'publish'] as const) {
    const base = results.get(`${measure} none`)!;
    const baseRate = median(base.map((f) => f.jobsPerSecond));
    const baseCpu = median(base.map((f) => f.cpuMicrosPerJob));
    for (const variant of VARIANTS) {
      const xs = results.get(`${measure} ${variant}`)!;
      const rate = median(xs.map((f) => f.jobsPerSecond));
      const cpu = median(xs.map((f) => f.cpuMicrosPerJob));
      const pct = (x: number, b: number) =>
        variant === 'none' ? '—' : `${(((x - b) / b) * 100).toFixed(1)} %`;
      console.log(
        `| ${measure} | ${variant} | ${rate.toFixed(0)} | ${pct(rate, baseRate)} | ${cpu.toFixed(1)} | ${pct(cpu, baseCpu)} |`,
      );
    }
  }
  await provider.shutdown();
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
