import { ConfigurationError } from './errors';
import { validationMessage } from './validation-message';

/**
 * Signals a handler throws to steer its own job. They are not library failures: warren never throws
 * them, it reacts to them.
 */

/** Throw from a handler to skip the remaining attempts: the job goes straight to dead letters. */
export class UnrecoverableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UnrecoverableError';
  }
}

/**
 * Throw from a handler to retry after a delay of the handler's choosing. It still spends an attempt;
 * when no attempt is left the job is dead-lettered like any other failure.
 */
export class RetryLaterError extends Error {
  readonly delayMs: number;

  constructor(delayMs: number, message = `retry requested in ${delayMs} ms`, options?: { cause?: unknown }) {
    // A NaN or negative delay would retry at once, in a hot loop: refuse it where the handler made it.
    if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0)
      throw new ConfigurationError(
        validationMessage('RetryLaterError delayMs', 'must be a finite number >= 0', delayMs),
      );
    super(message, options);
    this.name = 'RetryLaterError';
    this.delayMs = delayMs;
  }
}

/**
 * Thrown by a routing slip when a compensation used up its attempts: the slip is parked in dead
 * letters with reason `compensation-failed` (nothing continues silently).
 */
export class CompensationFailedError extends UnrecoverableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CompensationFailedError';
  }
}
