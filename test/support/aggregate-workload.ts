import { defineTopology, Job, type JobContext, type JobHandler, type Warren } from '../../src';
import { passTime, waitFor } from './wait-for';

/**
 * A known workload for the aggregates' tests (the graph's and the API's): 600 jobs over 3 buckets, 200
 * published just after each bucket opens, every tenth failing for good (attempts 1: dead-lettered), every
 * run taking RUN_MS. Each batch normally finishes inside its bucket (180 completed, 20 failed); what ran
 * is counted by the bucket of each outcome's time, so a loaded machine moves counts, never breaks the
 * comparison.
 */
export const BUCKET_MS = 3000;
export const RUN_MS = 25;
export const BATCHES = 3;
export const PER_BATCH = 200;

export const workloadTopology = defineTopology({ queues: { graphs: {} } });

@Job('graphs.step', { queue: 'graphs', attempts: 1, concurrency: 50 })
export class GraphStep implements JobHandler<{ readonly i: number }> {
  async handle(data: { readonly i: number }): Promise<{ readonly step: number }> {
    await new Promise((resolve) => setTimeout(resolve, RUN_MS));
    if (data.i % 10 === 0) throw new RangeError(`step ${data.i} fails, as every tenth does`);
    return { step: data.i };
  }
}

/** Reports 50, then 100, then holds until released: a running job the overview lists with its progress. */
@Job('graphs.held', { queue: 'graphs', attempts: 1 })
export class HeldStep implements JobHandler<object> {
  readonly releases: (() => void)[] = [];
  async handle(_data: object, ctx: JobContext): Promise<void> {
    await ctx.progress(50);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await ctx.progress(100);
    await new Promise<void>((resolve) => this.releases.push(resolve));
  }
}

/** What the workload ran, by bucket start: completed and failed. */
export interface RanBucket {
  readonly start: number;
  readonly completed: number;
  readonly failed: number;
}

/** Runs the workload on a started warren; returns each bucket's counts as the handler saw them. */
export async function runWorkload(warren: Warren): Promise<RanBucket[]> {
  let settled = 0;
  // What ran, by the bucket its outcome's time falls in (as the collector counts it): a batch that spills
  // into the next bucket on a loaded machine is counted where it ran, not where it was meant to.
  const byBucket = new Map<number, { completed: number; failed: number }>();
  const count = (kind: 'completed' | 'failed') => {
    settled += 1;
    const start = Math.floor(Date.now() / BUCKET_MS) * BUCKET_MS;
    const bucket = byBucket.get(start) ?? { completed: 0, failed: 0 };
    bucket[kind] += 1;
    byBucket.set(start, bucket);
  };
  warren.on('completed', (e) => {
    if (e.name === 'graphs.step') count('completed');
  });
  warren.on('deadLettered', (e) => {
    if (e.name === 'graphs.step') count('failed');
  });
  for (let batch = 0; batch < BATCHES; batch++) {
    // Just after a boundary: the batch has the whole bucket to finish in.
    await passTime(BUCKET_MS - (Date.now() % BUCKET_MS) + 50);
    const before = settled;
    await Promise.all(Array.from({ length: PER_BATCH }, (_, i) => warren.publish('graphs.step', { i })));
    await waitFor(() => settled - before === PER_BATCH || undefined, {
      what: `batch ${batch} settled`,
      timeoutMs: 4 * BUCKET_MS,
    });
  }
  return [...byBucket].sort(([a], [b]) => a - b).map(([start, ran]) => ({ start, ...ran }));
}
