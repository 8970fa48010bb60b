import { makeJobs } from '../job';
import { measure } from '../measure';
import type { Sizes } from '../options';
import { startWorker } from '../worker-client';
import { JOBS_PER_SEC, Scenario } from './scenario';

/** Fed in chunks while it consumes, as a producer would, rather than pre-filled with the whole run. */
const FEED_CHUNK = 10_000;

/**
 * RSS and retained heap of a forked worker before, halfway through and after consuming many jobs:
 * a leak keeps growing in the second half, a runtime settling in (V8 sizing its young generation
 * to the allocation rate, allocator arenas) does not. One round: it is a bound, not a ratio.
 */
export function memory(sizes: Sizes): Scenario {
  const total = sizes.memoryJobs;
  return {
    id: 7,
    key: '7',
    title: `Worker memory before/halfway/after consuming ${total.toLocaleString('en')} jobs, concurrency ${sizes.memoryConcurrency}`,
    rounds: sizes.memoryRounds,
    // 1M jobs: far longer than any other run, and bounded by the slowest contender's drain rate
    timeoutMs: Math.max(sizes.runTimeoutMs, total),
    metrics: [
      { key: 'rssAfterMb', label: 'RSS after MB', digits: 1 },
      { key: 'rssBeforeMb', label: 'RSS before MB', digits: 1 },
      { key: 'rssHalfwayMb', label: 'RSS halfway MB', digits: 1 },
      { key: 'secondHalfGrowthMb', label: 'RSS growth in 2nd half MB', digits: 1, noRatio: true },
      { key: 'maxRssMb', label: 'peak RSS MB', digits: 1 },
      { key: 'heapBeforeMb', label: 'heap before MB', digits: 1 },
      { key: 'heapAfterMb', label: 'heap after MB', digits: 1 },
      JOBS_PER_SEC,
    ],
    async run({ contender, contenderName, env, queue, brokers }) {
      const worker = await startWorker({
        contender: contenderName,
        env,
        queue,
        concurrency: sizes.memoryConcurrency,
        expect: total,
        recordLatency: false,
      });
      try {
        const { value: report, wallMs, cpu } = await measure(brokers, async () => {
          for (let fed = 0; fed < total; fed += FEED_CHUNK) {
            await contender.prefill(makeJobs(Math.min(FEED_CHUNK, total - fed), fed));
          }
          return worker.done;
        });
        const halfway = await worker.halfway;
        return {
          metrics: {
            rssAfterMb: report.memory.rssMb,
            rssBeforeMb: worker.memoryBefore.rssMb,
            rssHalfwayMb: halfway.rssMb,
            secondHalfGrowthMb: report.memory.rssMb - halfway.rssMb,
            maxRssMb: report.maxRssMb,
            heapBeforeMb: worker.memoryBefore.heapUsedMb,
            heapAfterMb: report.memory.heapUsedMb,
            jobsPerSec: (total / wallMs) * 1000,
          },
          cpu: { ...cpu, workerMs: report.cpuMs },
          wallMs,
          jobs: total,
        };
      } finally {
        await worker.close();
      }
    },
  };
}
