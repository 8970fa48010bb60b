import type { JobOptions } from '../core';

/**
 * Reflect-metadata keys. `Symbol.for` so two copies of warren in one process read each other's decorations.
 */
export const JOB_METADATA = Symbol.for('warren:job');
export const CRON_METADATA = Symbol.for('warren:cron');

/** What `@Job` (or `defineJob`) records: the job's name and its options as given. */
export interface JobMetadata {
  readonly name: string;
  readonly options: JobOptions;
}
