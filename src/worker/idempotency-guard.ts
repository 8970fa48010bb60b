/**
 * What the worker needs of an idempotency store. A job id is claimed before its handler runs and
 * marked completed after it succeeded; a failed attempt releases the claim so its retry can run.
 * - `claimed`: run the job.
 * - `completed`: it already ran; ack without running (the `duplicate` event).
 * - `running`: another worker holds an unexpired claim; try again after `retryInMs` without spending
 *   an attempt (if that worker dies, its claim expires and this copy runs).
 */
export type ClaimResult =
  | { readonly status: 'claimed' }
  | { readonly status: 'completed' }
  | { readonly status: 'running'; readonly retryInMs: number };

export interface IdempotencyGuard {
  /** Claim `jobId` for `leaseMs` (the job's timeout plus a margin). */
  claim(jobId: string, leaseMs: number): Promise<ClaimResult>;
  /** The job succeeded: later copies of this id are duplicates (until the store's retention passes). */
  complete(jobId: string): Promise<void>;
  /** The attempt failed or the job was dead-lettered: a later copy (a retry, a replay) may run. */
  release(jobId: string): Promise<void>;
}
