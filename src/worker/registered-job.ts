import type { ResolvedLimiter } from '../coordination';
import type { BackoffOptions, JobHandler, StandardSchemaV1 } from '../core';
import type { PlannedJob } from '../topology';
import type { BatchSettings } from './batch-settings';
import type { IsolateSettings } from './isolate-settings';

/** A job this process runs: its plan entry, its handler instance and its resolved settings. */
export interface RegisteredJob {
  readonly planned: PlannedJob;
  readonly handler: JobHandler;
  readonly attempts: number;
  readonly backoff: BackoffOptions;
  readonly timeoutMs: number;
  readonly schema: StandardSchemaV1 | undefined;
  readonly breakers: readonly string[];
  /** The global rate limit it takes a permit from before it runs (`@Job({ limiter })`), if any. */
  readonly limiter?: ResolvedLimiter | undefined;
  /** Where it runs when not inline: its isolate pool's settings (`@Job({ isolate })`). */
  readonly isolate?: IsolateSettings | undefined;
  /** Its batch, when `handleBatch` takes its jobs in groups (`@Job({ batch })`). */
  readonly batch?: BatchSettings | undefined;
}

/**
 * How long one run may hold its delivery: an isolated job's hard timeout, else its timeout; a batch job's
 * delivery also waits up to `batch.timeoutMs` for its batch first.
 */
export function runLimitMs(job: Pick<RegisteredJob, 'timeoutMs' | 'isolate' | 'batch'>): number {
  return Math.max(job.timeoutMs, job.isolate?.hardTimeoutMs ?? 0) + (job.batch?.timeoutMs ?? 0);
}
