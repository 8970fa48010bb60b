import { performance } from 'perf_hooks';
import { makeJob } from '../job';
import { measure } from '../measure';
import type { Sizes } from '../options';
import { percentile, sortedCopy } from '../stats';
import { JOBS_PER_SEC, Scenario } from './scenario';

export function enqueueSerial(sizes: Sizes): Scenario {
  return {
    id: 1,
    key: '1',
    title: `Enqueue, one caller awaiting each confirmed publish (${sizes.serialPublishes.toLocaleString('en')} jobs)`,
    metrics: [JOBS_PER_SEC, { key: 'p50Ms', label: 'p50 ms', digits: 2 }, { key: 'p99Ms', label: 'p99 ms', digits: 2 }],
    async run({ contender, brokers }) {
      for (let i = 0; i < sizes.serialWarmup; i++) await contender.publish(makeJob(i));
      const latencies = new Float64Array(sizes.serialPublishes);
      const { wallMs, cpu } = await measure(brokers, async () => {
        for (let i = 0; i < latencies.length; i++) {
          const job = makeJob(i);
          const start = performance.now();
          await contender.publish(job);
          latencies[i] = performance.now() - start;
        }
      });
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
