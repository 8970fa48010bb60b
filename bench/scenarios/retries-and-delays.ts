import { performance } from 'node:perf_hooks';
import type { Consumer } from '../adapters/contender';
import { makeJob, makeJobs, nowUs, type Job } from '../job';
import { measure } from '../measure';
import type { Sizes } from '../options';
import { percentile, sortedCopy } from '../stats';
import { JOBS_PER_SEC, Scenario } from './scenario';

/**
 * Delayed jobs published at once with delays in whole 100 ms steps up to `delayMaxMs` (the same set
 * for every contender), consumed in this process: lateness = handler start − publish call − delay.
 */
export function delayLateness(sizes: Sizes): Scenario {
  const total = sizes.delayJobs;
  const steps = sizes.delayMaxMs / 100;
  // spread over the whole range without randomness, so every contender and round waits the same delays
  const delayOf = (seq: number) => 100 * (1 + ((seq * 7919) % steps));
  return {
    id: 6,
    key: '6-delay',
    title: `Delayed jobs: ${total} published at once, delays 0.1–${sizes.delayMaxMs / 1000} s, lateness beyond the delay`,
    features: { delays: true },
    timeoutMs: Math.max(sizes.runTimeoutMs, sizes.delayMaxMs + 60_000),
    requires: ['publishDelayed'],
    metrics: [
      { key: 'p99Ms', label: 'late p99 ms', digits: 0 },
      { key: 'p50Ms', label: 'late p50 ms', digits: 0 },
      { key: 'maxMs', label: 'late max ms', digits: 0 },
      { key: 'minMs', label: 'late min ms', digits: 0 },
    ],
    async run({ contender, brokers }) {
      const lateness = new Float64Array(total);
      let arrived = 0;
      let finish!: () => void;
      const allArrived = new Promise<void>((resolve) => (finish = resolve));
      const consumer = await contender.consume(100, (job) => {
        lateness[arrived++] = (nowUs() - job.sentAtUs) / 1000 - delayOf(job.seq);
        if (arrived === total) finish();
      });
      try {
        const { wallMs, cpu } = await measure(brokers, async () => {
          await Promise.all(
            Array.from({ length: total }, (_, seq) => contender.publishDelayed!(makeJob(seq), delayOf(seq))),
          );
          await allArrived;
        });
        const sorted = sortedCopy(lateness);
        return {
          metrics: {
            p99Ms: percentile(sorted, 99),
            p50Ms: percentile(sorted, 50),
            maxMs: sorted[total - 1],
            minMs: sorted[0],
          },
          cpu,
          wallMs,
          jobs: total,
        };
      } finally {
        await consumer.stop();
      }
    },
  };
}

/**
 * The cost of one retry per job: the same number of pre-filled jobs drained at concurrency
 * `retryConcurrency` twice in one run, once succeeding first time, once failing every first attempt
 * (retried without backoff, through each contender's own retry mechanism).
 */
export function retryCost(sizes: Sizes): Scenario {
  const total = sizes.retryJobs;
  const concurrency = sizes.retryConcurrency;
  return {
    id: 6,
    key: '6-retry',
    title: `Retry cost: ${total.toLocaleString('en')} pre-filled jobs at concurrency ${concurrency}, each failing once, against the same jobs succeeding first time`,
    requires: ['prefillRetryable', 'consumeFailingOnce'],
    metrics: [
      JOBS_PER_SEC,
      { key: 'firstTimeJobsPerSec', label: 'first-time jobs/s', digits: 0 },
      { key: 'retryRatio', label: 'fail-once ÷ first-time', digits: 2, noRatio: true },
    ],
    async run({ contender, brokers }) {
      await contender.prefill(makeJobs(total));
      const firstTime = await drain(total, (onJob) => contender.consume(concurrency, onJob));
      await contender.prefillRetryable!(makeJobs(total));
      const { value: failOnce, cpu } = await measure(brokers, () =>
        drain(total, (onJob) => contender.consumeFailingOnce!(concurrency, onJob)),
      );
      const jobsPerSec = (total / failOnce) * 1000;
      const firstTimeJobsPerSec = (total / firstTime) * 1000;
      return {
        metrics: { jobsPerSec, firstTimeJobsPerSec, retryRatio: jobsPerSec / firstTimeJobsPerSec },
        cpu,
        wallMs: failOnce,
        jobs: total,
      };
    },
  };
}

/** ms from the consumer being attached to the last of `total` jobs handled. */
async function drain(
  total: number,
  start: (onJob: (job: Job) => void) => Promise<Consumer>,
): Promise<number> {
  let handled = 0;
  let finish!: (at: number) => void;
  const finished = new Promise<number>((resolve) => (finish = resolve));
  const consumer = await start(() => {
    if (++handled === total) finish(performance.now());
  });
  const started = performance.now();
  try {
    return (await finished) - started;
  } finally {
    await consumer.stop();
  }
}
