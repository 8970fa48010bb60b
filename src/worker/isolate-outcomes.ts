import { CircuitOpenError, IsolateError, RetryLaterError, UnrecoverableError } from '../core';
import type { IsolateExit } from './isolate-handle';
import type { CrossedError, IsolateJobInfo } from './isolate-protocol';
import type { IsolateSettings } from './isolate-settings';

/** The error of a run its isolate's end decided (a kill of the pool's, or an end of its own). */
export function endError(
  pool: {
    readonly jobName: string;
    readonly settings: Pick<IsolateSettings, 'kind' | 'hardTimeoutMs' | 'memoryLimitMb'>;
  },
  reason: IsolateError['reason'],
  job: IsolateJobInfo,
  exit: IsolateExit,
): IsolateError {
  const { jobName, settings } = pool;
  const { kind, hardTimeoutMs, memoryLimitMb } = settings;
  const what =
    reason === 'hard-timeout'
      ? `killed at its hard timeout (${hardTimeoutMs} ms)`
      : reason === 'memory-limit'
        ? `killed past its memory cap (${memoryLimitMb} MiB)`
        : `ended mid-job (${describeExit(exit)})`;
  return new IsolateError(reason, `the ${kind} isolate of job '${jobName}' was ${what}`, {
    jobName: job.name,
    jobId: job.jobId,
    queue: job.queue,
    attempt: job.attempt,
    ...(exit.error !== undefined ? { cause: exit.error } : {}),
  });
}

export function describeExit(exit: IsolateExit): string {
  if (exit.error !== undefined) return `${exit.error.name}: ${exit.error.message}`;
  if (exit.signal !== null) return `signal ${exit.signal}`;
  return `exit code ${exit.code}`;
}

/**
 * An error that crossed back from an isolate, as the retry policy reads it: the handler signals
 * (UnrecoverableError, RetryLaterError, CircuitOpenError) rebuilt as themselves, any other error as an
 * Error with its name, message, stack and code.
 */
export function rebuildError(crossed: CrossedError): Error {
  let error: Error;
  if (crossed.name === 'UnrecoverableError') error = new UnrecoverableError(crossed.message);
  else if (crossed.name === 'RetryLaterError' && crossed.delayMs !== undefined)
    error = new RetryLaterError(crossed.delayMs, crossed.message);
  else if (crossed.name === 'CircuitOpenError' && crossed.breaker !== undefined)
    error = new CircuitOpenError(crossed.breaker);
  else {
    error = new Error(crossed.message);
    error.name = crossed.name;
    if (crossed.code !== undefined) (error as { code?: string }).code = crossed.code;
  }
  if (crossed.stack !== undefined) error.stack = crossed.stack;
  return error;
}
