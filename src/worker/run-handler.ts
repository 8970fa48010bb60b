import { JobTimeoutError, ShutdownError, type JobContext } from '../core';
import type { RegisteredJob } from './registered-job';

export type RunOutcome =
  | { readonly kind: 'completed'; readonly result: unknown }
  | { readonly kind: 'failed'; readonly error: unknown }
  /** Stopped by a shutdown past its grace period: the job goes back to the queue, no attempt spent. */
  | { readonly kind: 'aborted' };

export interface RunningJob {
  readonly outcome: Promise<RunOutcome>;
  /**
   * Aborts `ctx.signal` (with `reason`, default a ShutdownError) and settles the outcome as `aborted`.
   */
  abortForShutdown(reason?: Error): void;
  /**
   * Settles when the handler's own code has returned (or thrown), which may be after `outcome` when it was
   * aborted or timed out: an ordered partition hands over only after it (docs/guide/ordered-partitions.md).
   */
  readonly ended?: Promise<unknown>;
  /** An ordered partition's job waiting out its backoff in place (no handler runs): a handover ends it at once. */
  readonly isBackoff?: true;
}

/**
 * The backoff of a job retried in place (ordered partitions): it holds the delivery, and so its key, for
 * `delayMs`, then completes; aborted (a handover, a shutdown, a lost lease) it ends at once as `aborted`.
 */
export function waitInPlace(delayMs: number): RunningJob {
  let settle!: (outcome: RunOutcome) => void;
  const outcome = new Promise<RunOutcome>((resolve) => {
    settle = resolve;
  });
  const timer = setTimeout(() => settle({ kind: 'completed', result: undefined }), delayMs);
  return {
    outcome,
    isBackoff: true,
    abortForShutdown() {
      clearTimeout(timer);
      settle({ kind: 'aborted' });
    },
  };
}

/**
 * Runs one handler call with its timeout. On timeout the signal aborts and the attempt fails at once
 * (a handler that ignores its signal keeps running, but its result no longer counts).
 *
 * The AbortController is made only when the handler reads `ctx.signal`: creating one costs more
 * than the rest of a no-op job's bookkeeping (profiled), and most handlers never look at it.
 */
export function runHandler(
  registered: Pick<RegisteredJob, 'handler' | 'timeoutMs'>,
  data: unknown,
  makeContext: (signal: () => AbortSignal, abort: (reason: Error) => void) => JobContext,
  scope?: { run<T>(fn: () => T): T },
): RunningJob {
  const { handler, timeoutMs } = registered;
  let controller: AbortController | undefined;
  let abortReason: Error | undefined;
  const signal = () => {
    if (controller === undefined) {
      controller = new AbortController();
      if (abortReason !== undefined) controller.abort(abortReason);
    }
    return controller.signal;
  };
  const abort = (reason: Error) => {
    abortReason = reason;
    controller?.abort(reason);
  };
  let settle!: (outcome: RunOutcome) => void;
  let settled = false;
  const outcome = new Promise<RunOutcome>((resolve) => {
    settle = (o) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
  });
  const ctx = makeContext(signal, abort);
  const timer = setTimeout(() => {
    const { name: jobName, jobId, queue, attempt } = ctx;
    const error = new JobTimeoutError(timeoutMs, { jobName, jobId, queue, attempt });
    abort(error);
    settle({ kind: 'failed', error });
  }, timeoutMs);
  let ended: Promise<unknown>;
  try {
    const result =
      scope === undefined ? handler.handle(data, ctx) : scope.run(() => handler.handle(data, ctx));
    ended = Promise.resolve(result).then(
      (result) => settle({ kind: 'completed', result }),
      (error: unknown) => settle({ kind: 'failed', error }),
    );
  } catch (error) {
    settle({ kind: 'failed', error });
    ended = outcome;
  }
  return {
    outcome,
    ended,
    abortForShutdown(reason?: Error) {
      if (settled) return;
      abort(reason ?? new ShutdownError('worker shut down before the job finished; it returns to the queue'));
      settle({ kind: 'aborted' });
    },
  };
}
