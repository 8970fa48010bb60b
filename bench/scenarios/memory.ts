import { makeJobs } from '../lib/job';
import { measure } from '../lib/measure';
import type { Sizes } from '../lib/options';
import { startWorker } from '../lib/worker-client';
import { JOBS_PER_SEC, Scenario } from './scenario';

/** Fed in chunks while it consumes, as a producer would, rather than pre-filled with the whole run. */
const FEED_CHUNK = 10_000;

/**
 * RSS and retained heap of a forked worker while it consumes many jobs, read (after a forced GC)
 * every tenth of the run. A leak keeps growing in the second half; a runtime settling in (V8 sizing
 * its young generation to the allocation rate, allocator arenas) reaches its level in the first.
 * One round: it is a bound, not a ratio.
 */
export function memory(sizes: Sizes): Scenario {
  const total = sizes.memoryJobs;
  return {
    id: 7,
    key: '7',
    title: `Worker memory while consuming ${total.toLocaleString('en')} jobs, concurrency ${sizes.memoryConcurrency}, read every ${(total / 10).toLocaleString('en')}`,
    rounds: sizes.memoryRounds,
    // far longer than any other run, and bounded by the slowest contender's drain rate
    timeoutMs: Math.max(sizes.runTimeoutMs, total),
    metrics: [
      { key: 'rssBeforeMb', label: 'RSS before MB', digits: 1 },
      { key: 'rssFirstHalfMaxMb', label: 'RSS max 1st half MB', digits: 1 },
      { key: 'rssSecondHalfMaxMb', label: 'RSS max 2nd half MB', digits: 1 },
      { key: 'rssGrowthMb', label: '2nd − 1st half MB', digits: 1, noRatio: true },
      { key: 'heapBeforeMb', label: 'heap before MB', digits: 1 },
      { key: 'heapHalfwayMb', label: 'heap halfway MB', digits: 1 },
      { key: 'heapAfterMb', label: 'heap after MB', digits: 1 },
      { key: 'maxRssMb', label: 'peak RSS MB', digits: 1 },
      JOBS_PER_SEC,
    ],
    async run({ contender, contenderName, env, queue, brokers, features }) {
      const worker = await startWorker({
        contender: contenderName,
        env,
        queue,
        features,
        concurrency: sizes.memoryConcurrency,
        expect: total,
        recordLatency: false,
        sampleMemory: true,
      });
      try {
        const {
          value: report,
          wallMs,
          cpu,
        } = await measure(brokers, async () => {
          for (let fed = 0; fed < total; fed += FEED_CHUNK) {
            await contender.prefill(makeJobs(Math.min(FEED_CHUNK, total - fed), fed));
          }
          return worker.done;
        });
        // readings at 10 %..90 % and the final one
        const readings = [...worker.samples, report.memory];
        const half = Math.ceil(readings.length / 2);
        const maxRss = (from: number, to: number) =>
          Math.max(...readings.slice(from, to).map((r) => r.rssMb));
        const firstHalf = maxRss(0, half);
        const secondHalf = maxRss(half, readings.length);
        return {
          metrics: {
            rssBeforeMb: worker.memoryBefore.rssMb,
            rssFirstHalfMaxMb: firstHalf,
            rssSecondHalfMaxMb: secondHalf,
            rssGrowthMb: secondHalf - firstHalf,
            heapBeforeMb: worker.memoryBefore.heapUsedMb,
            heapHalfwayMb: readings[half - 1]!.heapUsedMb,
            heapAfterMb: report.memory.heapUsedMb,
            maxRssMb: report.maxRssMb,
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
