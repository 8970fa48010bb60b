import { performance } from 'node:perf_hooks';
import { runCallers } from '../lib/callers';
import { makeJob } from '../lib/job';
import { measure } from '../lib/measure';
import type { Sizes } from '../lib/options';
import { percentile, sortedCopy } from '../lib/stats';
import { JOBS_PER_SEC, Scenario } from './scenario';

/** Scenario 1: one caller awaiting each confirmed publish before the next. */
export function enqueueSerial(sizes: Sizes): Scenario {
  return enqueueAwaited({
    id: 1,
    title: `Enqueue, one caller awaiting each confirmed publish (${sizes.serialPublishes.toLocaleString('en')} jobs)`,
    callers: 1,
    publishes: sizes.serialPublishes,
    warmup: sizes.serialWarmup,
    latencyDigits: 2,
  });
}

/** Scenario 2: like a busy web server, many requests, each awaiting the confirm of its own job. */
export function enqueueConcurrent(sizes: Sizes): Scenario {
  const callers = sizes.concurrentCallers;
  return enqueueAwaited({
    id: 2,
    title: `Enqueue, ${callers} concurrent callers each awaiting its own publish (${sizes.concurrentPublishes.toLocaleString('en')} jobs)`,
    callers,
    publishes: sizes.concurrentPublishes,
    warmup: sizes.concurrentWarmup,
    latencyDigits: 1,
  });
}

interface AwaitedShape {
  id: number;
  title: string;
  callers: number;
  publishes: number;
  warmup: number;
  latencyDigits: number;
}

function enqueueAwaited(shape: AwaitedShape): Scenario {
  const digits = shape.latencyDigits;
  return {
    id: shape.id,
    key: String(shape.id),
    title: shape.title,
    metrics: [
      JOBS_PER_SEC,
      { key: 'p50Ms', label: 'p50 ms', digits },
      { key: 'p99Ms', label: 'p99 ms', digits },
    ],
    async run({ contender, brokers }) {
      await runCallers(shape.callers, shape.warmup, (i) => contender.publish(makeJob(i)));
      const latencies = new Float64Array(shape.publishes);
      const { wallMs, cpu } = await measure(brokers, () =>
        runCallers(shape.callers, latencies.length, async (i) => {
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
