import type { Logger } from '../core';
import { HEADERS } from '../message';
import type { JobDelivery } from './delivery';

/** Where the ids of jobs published with `deduplicate` are reserved (docs/guide/deduplication.md). */
export interface DedupReleaseStore {
  release(jobId: string): Promise<void>;
}

/**
 * Frees the id of a job published with `deduplicate` (its `warren-dedup` header) once the job ended:
 * completed, dead-lettered or cancelled. No store call for any other job. Best effort: a failed release
 * is logged, and the reservation expires on its own.
 */
export class DedupRelease {
  constructor(
    private readonly store: DedupReleaseStore | undefined,
    private readonly log: Logger,
  ) {}

  release(delivery: JobDelivery): void {
    const store = this.store;
    if (store === undefined || delivery.message.properties.headers?.[HEADERS.dedup] === undefined) return;
    const { jobId } = delivery.job;
    store
      .release(jobId)
      .catch((error: unknown) =>
        this.log.warn({ err: error, jobId }, 'could not release the deduplicated job id'),
      );
  }
}
