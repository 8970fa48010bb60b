import type { Logger } from '../core';
import { HEADERS } from '../message';
import type { JobDelivery } from './delivery';

/** Where the ids of jobs published with `deduplicate` are reserved (docs/guide/deduplication.md). */
export interface DedupReleaseStore {
  release(jobId: string, token?: string): Promise<void>;
}

/**
 * Frees the id of a job published with `deduplicate` (its `warren-dedup` header) once the job ended:
 * completed, dead-lettered or cancelled: the reservation its publish made (its token, the job's
 * `warren-enqueued-at`, which retries and replays keep), not a later publish's. No store call for any
 * other job. Best effort: a failed release is logged, and the reservation expires on its own.
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
    const enqueuedAt = delivery.message.properties.headers?.[HEADERS.enqueuedAt];
    store
      .release(jobId, Number.isSafeInteger(enqueuedAt) ? String(enqueuedAt) : undefined)
      .catch((error: unknown) =>
        this.log.warn({ err: error, jobId }, 'could not release the deduplicated job id'),
      );
  }
}
