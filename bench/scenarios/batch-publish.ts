import { makeJobs, type Payload } from '../lib/job';
import { measure } from '../lib/measure';
import { JOBS_PER_SEC, type Scenario } from './scenario';

export interface BatchShape {
  total: number;
  /** Jobs a window; each window's confirms are awaited before the next. `total` for all at once. */
  window: number;
  payload?: Payload;
  id: number;
  keyPrefix: string;
}

/**
 * Batch publish (issue 30): `total` jobs in windows of `window`, each window one `publishBulk` (warren:
 * `publishMany`; raw amqplib: pipelined on one confirm channel; Rascal: concurrent publishes) whose confirms
 * are all awaited before the next window is sent. One window ahead of the clock warms the path up.
 */
export function batchPublish(shape: BatchShape): Scenario {
  const { total, window } = shape;
  const atOnce = window >= total;
  return {
    id: shape.id,
    key: atOnce ? `${shape.keyPrefix}-${total}` : `${shape.keyPrefix}-w${window}`,
    title: atOnce
      ? `Batch publish ${total.toLocaleString('en')} jobs at once (warren: one publishMany)`
      : `Batch publish ${total.toLocaleString('en')} jobs in windows of ${window.toLocaleString('en')}, each window's confirms awaited (warren: publishMany)`,
    metrics: [JOBS_PER_SEC],
    async run({ contender, brokers }) {
      await contender.publishBulk(makeJobs(Math.min(window, 1_000), 0, shape.payload));
      const windows: ReturnType<typeof makeJobs>[] = [];
      for (let first = 0; first < total; first += window)
        windows.push(makeJobs(Math.min(window, total - first), first, shape.payload));
      const { wallMs, cpu } = await measure(brokers, async () => {
        for (const jobs of windows) await contender.publishBulk(jobs);
      });
      return { metrics: { jobsPerSec: (total / wallMs) * 1000 }, cpu, wallMs, jobs: total };
    },
  };
}
