import { WarrenError } from '../core';

/** A queue key the topology does not declare (`warren pause emial`). Code UNKNOWN_QUEUE. */
export class UnknownQueueError extends WarrenError {
  constructor(
    queue: string,
    readonly known: readonly string[],
  ) {
    super(
      'UNKNOWN_QUEUE',
      `unknown queue '${queue}'${known.length ? ` (declared: ${known.join(', ')})` : ' (no queues are declared)'}`,
      { queue },
    );
  }
}

/**
 * The management HTTP API was needed (diff, verify, unacked counts) but is not configured
 * (MANAGEMENT_NOT_CONFIGURED), or it failed: unreachable, refused the credentials, answered an error
 * (MANAGEMENT_FAILED).
 */
export class ManagementApiError extends WarrenError {
  constructor(
    code: 'MANAGEMENT_NOT_CONFIGURED' | 'MANAGEMENT_FAILED',
    message: string,
    readonly status?: number,
    cause?: unknown,
  ) {
    super(code, message, cause === undefined ? {} : { cause });
  }
}
