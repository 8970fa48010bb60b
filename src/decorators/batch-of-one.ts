import type { BatchJob, JobContext } from '../core';

/**
 * `handle(data, ctx)` of a batch job: its `handleBatch` called with one job, for the callers that run one
 * job at a time (`runJob`, a slip step). A job the handler marks failed throws that error; else the
 * result is the one given to `complete`.
 */
export function batchOfOne(
  handleBatch: (jobs: readonly BatchJob[], ctx: JobContext) => unknown,
): (data: unknown, ctx: JobContext) => Promise<unknown> {
  return async (data, ctx) => {
    let outcome: { readonly failed: boolean; readonly value: unknown } = { failed: false, value: undefined };
    const job: BatchJob = {
      data,
      jobId: ctx.jobId,
      attempt: ctx.attempt,
      maxAttempts: ctx.maxAttempts,
      headers: ctx.headers,
      enqueuedAt: ctx.enqueuedAt,
      redelivered: ctx.redelivered,
      fail: (error) => {
        outcome = { failed: true, value: error };
      },
      complete: (result) => {
        outcome = { failed: false, value: result };
      },
    };
    await handleBatch([job], ctx);
    if (outcome.failed) throw outcome.value;
    return outcome.value;
  };
}
