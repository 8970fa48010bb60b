import {
  CircuitOpenError,
  CompensationFailedError,
  IsolateError,
  jitteredBackoff,
  RetryLaterError,
  UnrecoverableError,
  type BackoffOptions,
} from '../core';

/**
 * The retry policy, pure: given a failed attempt, decide what happens to the job. The worker carries
 * the decision out (republish through the delay levels, or dead-letter), so the policy can be tested
 * without a broker.
 */
export type FailureDecision =
  | { readonly action: 'retry'; readonly delayMs: number; readonly nextAttempt: number }
  /** Try again later without spending an attempt (a circuit breaker is open). */
  | { readonly action: 'postpone'; readonly delayMs: number }
  | {
      readonly action: 'dead-letter';
      readonly reason: 'attempts-exhausted' | 'unrecoverable' | 'compensation-failed' | 'unserializable';
    };

export interface FailureInput {
  /** The attempt that failed, 1 for the first run. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly backoff: BackoffOptions;
  readonly error: unknown;
  /** Delay of a postponed job while its circuit breaker is open. */
  readonly postponeDelayMs: number;
  readonly random?: () => number;
}

export function decideFailure(input: FailureInput): FailureDecision {
  const { attempt, maxAttempts, error } = input;
  if (error instanceof CompensationFailedError)
    return { action: 'dead-letter', reason: 'compensation-failed' };
  if (error instanceof UnrecoverableError) return { action: 'dead-letter', reason: 'unrecoverable' };
  // Another attempt would cross the same value: it can never run.
  if (error instanceof IsolateError && error.reason === 'unserializable')
    return { action: 'dead-letter', reason: 'unserializable' };
  if (error instanceof CircuitOpenError) return { action: 'postpone', delayMs: input.postponeDelayMs };
  if (attempt >= maxAttempts) return { action: 'dead-letter', reason: 'attempts-exhausted' };
  const delayMs =
    error instanceof RetryLaterError && Number.isFinite(error.delayMs)
      ? Math.max(0, error.delayMs)
      : backoffDelay(input.backoff, attempt, error, input.random);
  return { action: 'retry', delayMs, nextAttempt: attempt + 1 };
}

/** Delay after failed attempt `attempt` (1-based). */
export function backoffDelay(
  backoff: BackoffOptions,
  attempt: number,
  error: unknown,
  random: () => number = Math.random,
): number {
  if (typeof backoff === 'function') {
    const delay = backoff(attempt, error);
    return Number.isFinite(delay) && delay > 0 ? delay : 0;
  }
  if (backoff.type === 'fixed') return backoff.delayMs;
  return jitteredBackoff(
    attempt,
    backoff.delayMs,
    backoff.maxDelayMs ?? 3_600_000,
    backoff.jitter ?? 0.2,
    random,
  );
}
