import type { ResolvedLimiter } from '../coordination';
import type { BackoffOptions, JobHandler, StandardSchemaV1 } from '../core';
import type { PlannedJob } from '../topology';

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
}
