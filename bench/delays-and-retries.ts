/**
 * Delay accuracy and the cost of a retry (issue 3's figures), warren only:
 * - lateness (arrival - publish - rounded delay) of N jobs with random delays between 100 ms and
 *   MAX published at once, p50 / p99 / max;
 * - throughput of a queue whose jobs all fail once and succeed on the second attempt, as a ratio to
 *   the same queue where every job succeeds first time (same run, same settings).
 * Usage: node dist/bench/delays-and-retries.js [--quick]
 */
import { randomBytes } from 'node:crypto';
import { createWarren, defineTopology, Job, type JobContext, type JobHandler, type Warren } from '../src';

const quick = process.argv.includes('--quick');
const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const DELAY_JOBS = quick ? 100 : 500;
const MAX_DELAY_MS = quick ? 10_000 : 60_000;
const RETRY_JOBS = quick ? 2_000 : 10_000;
/** `--classic-levels`: classic delay-level queues instead of the default quorum ones. */
const levelType = process.argv.includes('--classic-levels') ? ('classic' as const) : ('quorum' as const);

type Timed = { publishedAt: number; delayMs: number };

@Job('bench.delayed', { queue: 'delayed' })
class Delayed implements JobHandler<Timed> {
  readonly lateness: number[] = [];
  async handle(data: Timed) {
    const rounded = Math.ceil(data.delayMs / 100) * 100;
    this.lateness.push(Date.now() - data.publishedAt - rounded);
  }
}

@Job('bench.once', { queue: 'retry', attempts: 2, backoff: { type: 'fixed', delayMs: 0 }, concurrency: 100 })
class FailOnce implements JobHandler<{ fail: boolean }> {
  done = 0;
  async handle(data: { fail: boolean }, ctx: JobContext) {
    if (data.fail && ctx.attempt === 1) throw new Error('first attempt fails');
    this.done += 1;
  }
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('benchmark timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function withWarren<T>(handlers: object[], work: (warren: Warren) => Promise<T>): Promise<T> {
  const warren = await createWarren({
    url,
    namespace: `bench-${randomBytes(3).toString('hex')}`,
    topology: defineTopology({ queues: { delayed: {}, retry: {} } }),
    delay: { queueType: levelType },
    handlers,
  });
  try {
    await warren.start();
    return await work(warren);
  } finally {
    await warren.deleteTopology().catch(() => undefined);
    await warren.close();
  }
}

export async function measureDelayAccuracy(): Promise<{ jobs: number; p50: number; p99: number; max: number; min: number }> {
  const handler = new Delayed();
  return withWarren([handler], async (warren) => {
    const delays = Array.from({ length: DELAY_JOBS }, () => 100 + Math.floor(Math.random() * (MAX_DELAY_MS - 100)));
    await Promise.all(delays.map((delayMs) => warren.publish('bench.delayed', { publishedAt: Date.now(), delayMs }, { delayMs })));
    await until(() => handler.lateness.length === DELAY_JOBS, MAX_DELAY_MS + 30_000);
    const sorted = [...handler.lateness].sort((a, b) => a - b);
    return { jobs: DELAY_JOBS, min: sorted[0]!, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1]! };
  });
}

async function throughput(fail: boolean): Promise<number> {
  const handler = new FailOnce();
  return withWarren([handler], async (warren) => {
    const started = Date.now();
    const batch = 1000;
    for (let i = 0; i < RETRY_JOBS; i += batch) {
      await Promise.all(Array.from({ length: Math.min(batch, RETRY_JOBS - i) }, () => warren.publish('bench.once', { fail })));
    }
    await until(() => handler.done === RETRY_JOBS, 120_000);
    return RETRY_JOBS / ((Date.now() - started) / 1000);
  });
}

export async function measureRetryCost(): Promise<{ jobs: number; firstTimeJobsPerSec: number; retryOnceJobsPerSec: number; ratio: number }> {
  const rounds = quick ? 1 : 3;
  const ok: number[] = [];
  const retried: number[] = [];
  for (let r = 0; r < rounds; r++) {
    ok.push(await throughput(false));
    retried.push(await throughput(true));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const firstTimeJobsPerSec = Math.round(median(ok));
  const retryOnceJobsPerSec = Math.round(median(retried));
  return { jobs: RETRY_JOBS, firstTimeJobsPerSec, retryOnceJobsPerSec, ratio: Number((retryOnceJobsPerSec / firstTimeJobsPerSec).toFixed(2)) };
}

if (require.main === module) {
  (async () => {
    const delay = await measureDelayAccuracy();
    console.log(`delay accuracy (${levelType} levels): ${delay.jobs} jobs, random delays 100 ms..${MAX_DELAY_MS / 1000} s, lateness beyond the rounded delay: min ${delay.min} ms, p50 ${delay.p50} ms, p99 ${delay.p99} ms, max ${delay.max} ms`);
    const retry = await measureRetryCost();
    console.log(`retry cost: ${retry.jobs} jobs, all succeed first time ${retry.firstTimeJobsPerSec} jobs/s, all fail once ${retry.retryOnceJobsPerSec} jobs/s, ratio ${retry.ratio}`);
  })().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
