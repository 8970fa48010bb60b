/**
 * Consumer start-up: a job waits in its queue; a new warren process-alike (createWarren, then start)
 * runs it. Reports createWarren (connect, declare the topology, open the publisher), start (open the
 * consumer channel, subscribe) and start → handler start, over `rounds` rounds. Build first
 * (`npm run build`), then:
 *
 *   npm run bench -- consumer-startup [rounds=10]
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createWarren, defineTopology, Job, type JobHandler, type WarrenOptions } from '../../src';
import { percentile, sortedCopy } from '../lib/stats';

const rounds = Number(process.argv[2] ?? 10);
const amqpUrl = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

@Job('bench.start', { queue: 'start', attempts: 1 })
class StartJob implements JobHandler<object> {
  constructor(private readonly onJob: () => void) {}
  handle(): void {
    this.onJob();
  }
}

async function oneRound(options: WarrenOptions): Promise<{ create: number; start: number; first: number }> {
  let ran!: (at: number) => void;
  const firstJob = new Promise<number>((resolve) => (ran = resolve));
  const t0 = performance.now();
  const warren = await createWarren({ ...options, handlers: [new StartJob(() => ran(performance.now()))] });
  const t1 = performance.now();
  await warren.start();
  const t2 = performance.now();
  const t3 = await firstJob;
  await warren.close();
  return { create: t1 - t0, start: t2 - t1, first: t3 - t1 };
}

async function main(): Promise<void> {
  const options: WarrenOptions = {
    url: amqpUrl,
    namespace: `bench-start-${randomBytes(4).toString('hex')}`,
    topology: defineTopology({ queues: { start: {} } }),
    delay: { queueType: 'classic', levels: 4 },
  };
  const publisher = await createWarren({ ...options, jobs: [StartJob] });
  const results: { create: number; start: number; first: number }[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      await publisher.publish(StartJob, {});
      results.push(await oneRound(options));
    }
  } finally {
    await publisher.deleteTopology();
    await publisher.close();
  }
  const line = (what: string, pick: (r: (typeof results)[number]) => number) => {
    const sorted = sortedCopy(results.map(pick));
    return `${what} p50 ${percentile(sorted, 50).toFixed(1)} ms, max ${sorted[sorted.length - 1].toFixed(1)} ms`;
  };
  console.log(
    `consumer start-up, ${rounds} rounds: ${line('createWarren', (r) => r.create)}; ` +
      `${line('start()', (r) => r.start)}; ${line('start() → first job running', (r) => r.first)}`,
  );
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
