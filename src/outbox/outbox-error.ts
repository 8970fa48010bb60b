import { WarrenError } from '../core';

/** What the outbox was doing when the database failed it. */
export type OutboxOperation = 'createTable' | 'publish' | 'backlog';

/**
 * The outbox could not write or read its table: the database is unreachable, the table is missing
 * or of another shape, permissions are missing. The driver's error is the `cause`. A failed
 * `outbox.publish` leaves the caller's transaction aborted, as any failed statement does in PostgreSQL.
 */
export class OutboxError extends WarrenError {
  readonly operation: OutboxOperation;
  readonly table: string;

  constructor(
    operation: OutboxOperation,
    message: string,
    options: { table: string; jobId?: string; jobName?: string; cause?: unknown },
  ) {
    super('OUTBOX_FAILED', message, {
      ...(options.jobId !== undefined ? { jobId: options.jobId } : {}),
      ...(options.jobName !== undefined ? { jobName: options.jobName } : {}),
      cause: options.cause,
    });
    this.operation = operation;
    this.table = options.table;
  }
}
