import { WarrenError } from '../core';

/** What the store was doing when it failed. */
export type IdempotencyOperation = 'prepare' | 'claim' | 'complete' | 'release' | 'sweep';

/**
 * An idempotency store could not do its job: the database is unreachable, the table has another
 * shape, permissions are missing. The worker logs it and returns the job to its queue (it never runs
 * a job it could not claim). The driver's error is the `cause`.
 */
export class IdempotencyStoreError extends WarrenError {
  readonly operation: IdempotencyOperation;
  /** The store's table, for database stores. */
  readonly table: string | undefined;

  constructor(
    operation: IdempotencyOperation,
    message: string,
    options: { table?: string; jobId?: string; cause?: unknown } = {},
  ) {
    super('IDEMPOTENCY_STORE_FAILED', message, {
      ...(options.jobId !== undefined ? { jobId: options.jobId } : {}),
      cause: options.cause,
    });
    this.operation = operation;
    this.table = options.table;
  }
}
