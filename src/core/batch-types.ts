import type { Logger } from './logger';
import type { BreakerHandle, JobContext } from './job-types';

/**
 * One job of a batch, as `handleBatch` receives it: its payload and its own identity. A job that the
 * handler marks with `fail` is retried or dead-lettered alone, by its job's retry policy; the rest
 * complete (with the result given to `complete`, else undefined) when `handleBatch` returns.
 */
export interface BatchJob<TData = unknown> {
  readonly data: TData;
  readonly jobId: string;
  /** 1 for the first run of this job (each job of a batch counts its own attempts). */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly headers: Readonly<Record<string, unknown>>;
  /** ms since epoch when the job was first enqueued. */
  readonly enqueuedAt: number;
  readonly redelivered: boolean;
  /**
   * This job failed: the others of the batch still complete. The error follows the job's retry policy
   * (an UnrecoverableError dead-letters it, a RetryLaterError picks its delay). The last call wins.
   */
  fail(error: unknown): void;
  /** This job completed with `result` (what an awaited publish receives). The last call wins. */
  complete(result: unknown): void;
}

/** What `handleBatch` gets besides its jobs: the parts of a job's `ctx` that belong to the whole batch. */
export interface BatchContext {
  readonly name: string;
  readonly queue: string;
  /** Aborted when the batch times out (the job's `timeoutMs`) or the worker shuts down past its grace. */
  readonly signal: AbortSignal;
  /** A pino child logger carrying job, queue and the batch's size. */
  readonly log: Logger;
  /** Publish a follow-up job; confirmed like `warren.publish`. */
  readonly publish: JobContext['publish'];
  /** The named circuit breaker: an open breaker's CircuitOpenError postpones every job of the batch. */
  readonly breaker: (name: string) => BreakerHandle;
}

/** The contract of a batch handler class (`@Job({ batch })`). */
export interface BatchHandler<TData = unknown> {
  handleBatch(jobs: readonly BatchJob<TData>[], ctx: BatchContext): Promise<unknown> | unknown;
}
