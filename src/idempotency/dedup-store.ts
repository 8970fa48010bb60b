/** The job a deduplicated publish found waiting, delayed or running under its id. */
export interface DedupRecord {
  readonly jobId: string;
  readonly name: string;
  readonly queue: string;
}

export type ReserveResult =
  | { readonly status: 'reserved' }
  | { readonly status: 'exists'; readonly job: DedupRecord };

/**
 * Where deduplicated publishes reserve their job id (docs/guide/deduplication.md): a publish
 * with `deduplicate` reserves the id before it sends the job; while the reservation lives (the job
 * waits, is delayed or runs, and at most `ttlMs`), a second publish of the id returns the existing
 * job instead of enqueuing a copy. The worker releases it when the job completes or is dead-lettered
 * after its last attempt. warren ships {@link MemoryDedupStore} (one process) and
 * {@link PostgresDedupStore} (every process); any object with these methods works.
 */
export interface DedupStore {
  /**
   * Atomically reserves `job.jobId` for `ttlMs`, or returns the live reservation's job. `token` names this
   * reservation (the publish's `warren-enqueued-at`): keep it for `release`.
   */
  reserve(job: DedupRecord, ttlMs: number, token?: string): Promise<ReserveResult>;
  /**
   * The job finished (or its publish failed): the id may be published again. With a `token`, only the
   * reservation it names is freed: a job that ends after its reservation expired and a later publish
   * reserved the id again must not free that one (its copy still waits). A store that ignores tokens
   * frees the id whichever reservation holds it.
   */
  release(jobId: string, token?: string): Promise<void>;
  /** Optional: made ready (the table created); `createWarren` awaits it. */
  prepare?(): Promise<void>;
}
