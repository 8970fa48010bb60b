import { makeJob, nowUs } from '../lib/job';
import { measure } from '../lib/measure';
import type { Sizes } from '../lib/options';
import { percentile, sortedCopy } from '../lib/stats';
import type { Scenario } from './scenario';

const WARMUP_HOPS = 20;

/**
 * A chain of jobs, each handler publishing the next one (awaiting its confirm) before its own
 * delivery is acked, at concurrency 1 in this process: a hop is the time from one job's handler
 * start to its follow-up's handler start. This is where Nagle's algorithm bites: the follow-up's
 * publish is a small frame written right after the previous ack on the same connection.
 */
export function followUpPublish(sizes: Sizes): Scenario {
  const total = sizes.followUpJobs;
  return {
    id: 8,
    key: '8-follow-up',
    title: `A handler's follow-up publish: a chain of ${total} jobs, each published by the previous one's handler; time from one job's start to the next one's`,
    requires: ['consumeWithFollowUp'],
    metrics: [
      { key: 'p50Ms', label: 'hop p50 ms', digits: 2 },
      { key: 'p99Ms', label: 'hop p99 ms', digits: 2 },
      { key: 'maxMs', label: 'hop max ms', digits: 2 },
    ],
    async run({ contender, brokers }) {
      const startsUs = new Float64Array(total);
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const consumer = await contender.consumeWithFollowUp!((job) => {
        startsUs[job.seq] = nowUs();
        if (job.seq + 1 < total) return makeJob(job.seq + 1);
        finish();
        return undefined;
      });
      try {
        const { wallMs, cpu } = await measure(brokers, async () => {
          await contender.publish(makeJob(0));
          await finished;
        });
        const hops = new Float64Array(total - 1 - WARMUP_HOPS);
        for (let i = 0; i < hops.length; i++) {
          const seq = WARMUP_HOPS + i + 1;
          hops[i] = (startsUs[seq] - startsUs[seq - 1]) / 1000;
        }
        const sorted = sortedCopy(hops);
        return {
          metrics: {
            p50Ms: percentile(sorted, 50),
            p99Ms: percentile(sorted, 99),
            maxMs: sorted[sorted.length - 1],
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
