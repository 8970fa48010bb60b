import { performance } from 'perf_hooks';
import { runCallers } from '../callers';
import { makeJob } from '../job';
import { measure } from '../measure';
import type { Sizes } from '../options';
import { percentile, sortedCopy } from '../stats';
import { JOBS_PER_SEC, Scenario } from './scenario';

/** Like a busy web server: many requests, each awaiting the confirm of its own job. */
export function enqueueConcurrent(sizes: Sizes): Scenario {
  const callers = sizes.concurrentCallers;
  return {
    id: 2,
    key: '2',
    title: `Enqueue, ${callers} concurrent callers each awaiting its own publish (${sizes.concurrentPublishes.toLocaleString('en')} jobs)`,
    metrics: [JOBS_PER_SEC, { key: 'p50Ms', label: 'p50 ms', digits: 1 }, { key: 'p99Ms', label: 'p99 ms', digits: 1 }],
    async run({ contender, brokers }) {
      await runCallers(callers, sizes.concurrentWarmup, (i) => contender.publish(makeJob(i)));
      const latencies = new Float64Array(sizes.concurrentPublishes);
      const { wallMs, cpu } = await measure(brokers, () =>
        runCallers(callers, latencies.length, async (i) => {
          const job = makeJob(i);
          const start = performance.now();
          await contender.publish(job);
          latencies[i] = performance.now() - start;
        }),
      );
      const sorted = sortedCopy(latencies);
      return {
        metrics: {
          jobsPerSec: (latencies.length / wallMs) * 1000,
          p50Ms: percentile(sorted, 50),
          p99Ms: percentile(sorted, 99),
        },
        cpu,
        wallMs,
        jobs: latencies.length,
      };
    },
  };
}
