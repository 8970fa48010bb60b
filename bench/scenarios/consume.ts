import { performance } from 'node:perf_hooks';
import { CpuSample, CpuTimes, startCpuSample } from '../lib/cpu';
import { makeJobs, type Payload } from '../lib/job';
import type { Sizes } from '../lib/options';
import { JOBS_PER_SEC, Scenario } from './scenario';

export interface ConsumeShape {
  /** `small` (the default) or 1 KiB JSON payloads. */
  payload?: Payload;
  /** An async no-op handler (awaited before the ack) rather than a synchronous one. */
  asyncHandler?: boolean;
  /** Scenario number and key prefix; default 4 and `4`. */
  id?: number;
  keyPrefix?: string;
}

/** Drain a pre-filled queue of no-op jobs; timed from the warm-up's last job to the last job. */
export function consume(sizes: Sizes, concurrency: number, shape: ConsumeShape = {}): Scenario {
  const warmup = sizes.consumeWarmup;
  const timed = concurrency === 1 ? sizes.consumeJobsAtConcurrency1 : sizes.consumeJobs;
  const payload = shape.payload ?? 'small';
  const handler = shape.asyncHandler ? 'async no-op' : 'no-op';
  return {
    id: shape.id ?? 4,
    key: `${shape.keyPrefix ?? '4'}-c${concurrency}${shape.payload ? `-${payload}` : ''}`,
    title: `Consume ${timed.toLocaleString('en')} pre-filled ${handler} jobs${shape.payload ? ` (${payload} payload)` : ''}, concurrency ${concurrency}`,
    metrics: [JOBS_PER_SEC],
    async run({ contender, brokers }) {
      await contender.prefill(makeJobs(warmup + timed, 0, payload));
      let handled = 0;
      let start = 0;
      let sample: CpuSample | undefined;
      let finish!: (result: { wallMs: number; cpu: CpuTimes }) => void;
      const finished = new Promise<{ wallMs: number; cpu: CpuTimes }>((resolve) => (finish = resolve));
      const onJob = () => {
        handled++;
        if (handled === warmup) {
          sample = startCpuSample(brokers);
          start = performance.now();
        } else if (handled === warmup + timed && sample) {
          finish({ wallMs: performance.now() - start, cpu: sample.stop() });
        }
      };
      const consumer = await contender.consume(concurrency, shape.asyncHandler ? async () => onJob() : onJob);
      try {
        const { wallMs, cpu } = await finished;
        return { metrics: { jobsPerSec: (timed / wallMs) * 1000 }, cpu, wallMs, jobs: timed };
      } finally {
        await consumer.stop();
      }
    },
  };
}
