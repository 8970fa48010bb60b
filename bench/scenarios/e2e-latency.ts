import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeJob } from '../lib/job';
import { measure } from '../lib/measure';
import type { Sizes } from '../lib/options';
import { percentile, sortedCopy } from '../lib/stats';
import { startWorker } from '../lib/worker-client';
import type { Scenario } from './scenario';

/**
 * Jobs published at a steady rate (not waiting for confirms before the next), consumed by a forked
 * worker process; latency is enqueue call to handler start, both read from CLOCK_MONOTONIC.
 */
export function e2eLatency(sizes: Sizes): Scenario {
  const rate = sizes.e2eRatePerSec;
  const warmup = Math.round(rate * sizes.e2eWarmupSeconds);
  const timed = Math.round(rate * sizes.e2eSeconds);
  return {
    id: 5,
    key: '5',
    title: `End-to-end latency at ${rate.toLocaleString('en')} jobs/s for ${sizes.e2eSeconds} s, worker process at concurrency ${sizes.e2eConcurrency}`,
    metrics: [
      { key: 'p50Ms', label: 'p50 ms', digits: 2 },
      { key: 'p95Ms', label: 'p95 ms', digits: 2 },
      { key: 'p99Ms', label: 'p99 ms', digits: 2 },
      { key: 'achievedPerSec', label: 'jobs/s sent', digits: 0 },
    ],
    async run({ contender, contenderName, env, queue, brokers, features }) {
      const total = warmup + timed;
      const worker = await startWorker({
        contender: contenderName,
        env,
        queue,
        features,
        concurrency: sizes.e2eConcurrency,
        expect: total,
        recordLatency: true,
      });
      try {
        const {
          value: report,
          wallMs,
          cpu,
        } = await measure(brokers, async () => {
          const confirms: Promise<void>[] = [];
          const start = performance.now();
          while (confirms.length < total) {
            const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
            while (confirms.length < due) {
              const confirm = contender.publish(makeJob(confirms.length));
              confirm.catch(() => undefined); // a failure surfaces from Promise.all below, not as an unhandled rejection
              confirms.push(confirm);
            }
            await sleep(1);
          }
          await Promise.all(confirms);
          return worker.done;
        });
        const latencies = report.latenciesUs?.subarray(warmup) ?? new Float64Array();
        const sorted = sortedCopy(latencies);
        const ms = (p: number) => percentile(sorted, p) / 1000;
        return {
          metrics: { p50Ms: ms(50), p95Ms: ms(95), p99Ms: ms(99), achievedPerSec: (total / wallMs) * 1000 },
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
