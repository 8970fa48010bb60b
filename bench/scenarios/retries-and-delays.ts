import { performance } from 'node:perf_hooks';
import type { Consumer } from '../adapters/contender';
import { makeJobs, type Job } from '../lib/job';
import { measure } from '../lib/measure';
import type { Sizes } from '../lib/options';
import { JOBS_PER_SEC, Scenario } from './scenario';

/**
 * The cost of one retry per job: the same number of pre-filled jobs drained at concurrency
 * `retryConcurrency` twice in one run, once succeeding first time, once failing every first attempt
 * (retried without backoff, through each contender's own retry mechanism).
 */
export function retryCost(sizes: Sizes, backoffMs = 0, id = 6, keyPrefix = '6-retry'): Scenario {
  const total = sizes.retryJobs;
  const concurrency = sizes.retryConcurrency;
  const backoff = backoffMs === 0 ? 'retried at once' : `retried after ${backoffMs / 1000} s`;
  return {
    id,
    key: backoffMs === 0 && keyPrefix === '6-retry' ? keyPrefix : `${keyPrefix}-${backoffMs}ms`,
    title: `Retry cost: ${total.toLocaleString('en')} pre-filled jobs at concurrency ${concurrency}, each failing once (${backoff}), against the same jobs succeeding first time`,
    features: { retryBackoffMs: backoffMs },
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
