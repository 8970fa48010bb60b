/** What the worker needs of an idempotency store: has this job id completed, and record that it has. */
export interface IdempotencyGuard {
  isCompleted(jobId: string): Promise<boolean>;
  markCompleted(jobId: string): Promise<void>;
}
