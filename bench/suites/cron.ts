/**
 * Cron firing latency: one warren process leads and fires a schedule every second (`* * * * * *`); each
 * firing's handler start minus its tick time (read from the firing's job id, `<id>@<tick>`), over
 * `firings` ticks after one warm-up. The path: the leader's timer, its publish (confirmed), the
 * broker, the consumer. Build first (`npm run build`), then:
 *
 *   npm run bench -- cron [firings=30]
 */
import { randomBytes } from 'node:crypto';
import { createWarren, defineTopology, Job, type JobContext, type JobHandler } from '../../src';
import { percentile, sortedCopy } from '../lib/stats';

const firings = Number(process.argv[2] ?? 30);
const amqpUrl = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

@Job('bench.tick', { queue: 'ticks', attempts: 1 })
class Tick implements JobHandler<object> {
  readonly latenessMs: number[] = [];
  constructor(private readonly onTick: () => void) {}
  handle(_data: object, ctx: JobContext): void {
    const tickAt = Date.parse(ctx.jobId.slice(ctx.jobId.lastIndexOf('@') + 1));
    this.latenessMs.push(Date.now() - tickAt);
    this.onTick();
  }
}

async function main(): Promise<void> {
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const tick = new Tick(() => {
    if (tick.latenessMs.length === firings + 1) done();
  });
  const warren = await createWarren({
    url: amqpUrl,
    namespace: `bench-cron-${randomBytes(4).toString('hex')}`,
    topology: defineTopology({ queues: { ticks: {} } }),
    delay: { queueType: 'classic', levels: 4 },
    handlers: [tick],
    scheduler: { enabled: true },
  });
  try {
    await warren.cron.schedule('bench.tick', '* * * * * *', {});
    await warren.start();
    await finished;
  } finally {
    await warren.deleteTopology();
    await warren.close();
  }
  const sorted = sortedCopy(tick.latenessMs.slice(1));
  const f = (n: number) => n.toFixed(0);
  console.log(
    `cron firing, ${firings} ticks of '* * * * * *': handler start − tick time p50 ${f(percentile(sorted, 50))} ms, ` +
      `p99 ${f(percentile(sorted, 99))} ms, max ${f(sorted[sorted.length - 1])} ms, min ${f(sorted[0])} ms`,
  );
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
