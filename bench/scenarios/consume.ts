import { performance } from 'node:perf_hooks';
import { CpuSample, CpuTimes, startCpuSample } from '../cpu';
import { makeJobs } from '../job';
import type { Sizes } from '../options';
import { JOBS_PER_SEC, Scenario } from './scenario';

/** Drain a pre-filled queue of no-op jobs; timed from the warm-up's last job to the last job. */
export function consume(sizes: Sizes, concurrency: number): Scenario {
  const warmup = sizes.consumeWarmup;
  const timed = concurrency === 1 ? sizes.consumeJobsAtConcurrency1 : sizes.consumeJobs;
  return {
    id: 4,
    key: `4-c${concurrency}`,
    title: `Consume ${timed.toLocaleString('en')} pre-filled no-op jobs, concurrency ${concurrency}`,
    metrics: [JOBS_PER_SEC],
    async run({ contender, brokers }) {
      await contender.prefill(makeJobs(warmup + timed));
      let handled = 0;
      let start = 0;
      let sample: CpuSample | undefined;
      let finish!: (result: { wallMs: number; cpu: CpuTimes }) => void;
      const finished = new Promise<{ wallMs: number; cpu: CpuTimes }>((resolve) => (finish = resolve));
      const consumer = await contender.consume(concurrency, () => {
        handled++;
        if (handled === warmup) {
          sample = startCpuSample(brokers);
          start = performance.now();
        } else if (handled === warmup + timed && sample) {
          finish({ wallMs: performance.now() - start, cpu: sample.stop() });
        }
      });
      try {
        const { wallMs, cpu } = await finished;
        return { metrics: { jobsPerSec: (timed / wallMs) * 1000 }, cpu, wallMs, jobs: timed };
      } finally {
        await consumer.stop();
      }
    },
  };
}
