import { UnknownQueueError, WarrenError } from '../core';

export { UnknownQueueError };

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
