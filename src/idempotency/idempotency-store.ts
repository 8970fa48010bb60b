/**
 * The contract between the worker and an idempotency store. A job id is claimed before its handler
 * runs and marked completed after it succeeded; a failed or aborted attempt releases the claim so its
 * retry (or a replay from the dead letters) can run.
 *
 * - `claimed`: this worker runs the job now.
 * - `completed`: the id already completed (within the store's retention): the worker acks the copy
 *   without running it and emits `duplicate`.
 * - `running`: another worker holds an unexpired claim: the worker re-delays this copy by `retryInMs`
 *   without spending an attempt. If that worker died, its claim expires and a later copy runs.
 */
export type ClaimResult =
  | { readonly status: 'claimed' }
  | { readonly status: 'completed' }
  | { readonly status: 'running'; readonly retryInMs: number };

/**
 * Where job ids are claimed and remembered, so that one job id runs once even when it is published
 * twice, delivered to several worker processes, or redelivered after it completed. Pass one to
 * `createWarren({ idempotency })`. warren ships {@link MemoryIdempotencyStore} (one process) and
 * {@link PostgresIdempotencyStore} (shared by every worker); any object with these methods works.
 */
export interface IdempotencyStore {
  /**
   * Atomically claims `jobId` for `leaseMs` (the worker passes the job's timeout plus a margin), or
   * says why it cannot. A claim whose lease ran out counts as absent: its worker is presumed dead.
   */
  claim(jobId: string, leaseMs: number): Promise<ClaimResult>;
  /** The job succeeded: later copies of this id are duplicates until the store's retention passes. */
  complete(jobId: string): Promise<void>;
  /** The attempt failed, timed out or was aborted: drop the claim so a later copy may run. */
  release(jobId: string): Promise<void>;
  /**
   * Optional: made ready for use (e.g. create the table). `createWarren` awaits it, so a missing
   * database or a table of the wrong shape fails there, not on the first job.
   */
  prepare?(): Promise<void>;
}
