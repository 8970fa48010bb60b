import { defineTopology, Job, type JobContext, type JobHandler, type Warren } from '../../src';
import { passTime, waitFor } from './wait-for';

/**
 * A known workload for the aggregates' tests (the graph's and the API's): 600 jobs over 3 buckets, 200
 * published just after each bucket opens, every tenth failing for good (attempts 1: dead-lettered), every
 * run taking RUN_MS. Each batch must finish inside its bucket, or the split by bucket is not known: that
 * is checked, not assumed.
 */
export const BUCKET_MS = 3000;
export const RUN_MS = 25;
export const BATCHES = 3;
export const PER_BATCH = 200;

export const workloadTopology = defineTopology({ queues: { graphs: {} } });

@Job('graphs.step', { queue: 'graphs', attempts: 1, concurrency: 50 })
export class GraphStep implements JobHandler<{ readonly i: number }> {
  async handle(data: { readonly i: number }): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, RUN_MS));
    if (data.i % 10 === 0) throw new RangeError(`step ${data.i} fails, as every tenth does`);
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
  warren.on('completed', () => {
    settled += 1;
  });
  warren.on('deadLettered', () => {
    settled += 1;
  });
  const ran: RanBucket[] = [];
  for (let batch = 0; batch < BATCHES; batch++) {
    // Just after a boundary: the batch has the whole bucket to finish in.
    await passTime(BUCKET_MS - (Date.now() % BUCKET_MS) + 50);
    const start = Math.floor(Date.now() / BUCKET_MS) * BUCKET_MS;
    const before = settled;
    for (let i = 0; i < PER_BATCH; i++) await warren.publish('graphs.step', { i });
    await waitFor(() => settled - before === PER_BATCH || undefined, {
      what: `batch ${batch} settled`,
      timeoutMs: BUCKET_MS,
    });
    if (Math.floor(Date.now() / BUCKET_MS) * BUCKET_MS !== start)
      throw new Error(
        `batch ${batch} did not finish inside its bucket: the machine is too slow for BUCKET_MS`,
      );
    ran.push({ start, completed: PER_BATCH * 0.9, failed: PER_BATCH * 0.1 });
  }
  return ran;
}
