import {
  CircuitOpenError,
  CompensationFailedError,
  JobTimeoutError,
  UnrecoverableError,
  type EmitEvent,
  type JobContext,
  type JobHandler,
} from '../core';
import {
  SLIP_MAX_RESULT_BYTES,
  slipJobName,
  slipStepId,
  type SlipEnvelope,
  type SlipLogEntry,
} from './slip-envelope';

/**
 * An activity: an ordinary `@Job` handler that may also undo what it did. `compensate` receives the log
 * entry its own `handle` left (args and result) and must be idempotent: it runs at least once.
 */
export interface SlipActivity<TData = unknown> extends JobHandler<TData> {
  compensate?(log: SlipLogEntry, ctx: JobContext): Promise<unknown> | unknown;
}

/**
 * The handler of job `<activity>.slip`: runs one step of a slip (or undoes one) and publishes the next
 * message before returning, so the worker acks the current delivery only once the next one is confirmed.
 * Its retries are the worker's, under the activity's own attempts and backoff; a step's message is new,
 * so attempts count per step. On the last failed attempt it publishes the compensation instead of
 * failing; a compensation's last failed attempt throws CompensationFailedError (parked in dead letters).
 */
export class SlipStepHandler implements JobHandler<SlipEnvelope> {
  constructor(
    private readonly activity: SlipActivity,
    private readonly emit: EmitEvent,
    /** The activity's own timeout; the slip job's is longer, so a timed-out last attempt still compensates. */
    private readonly timeoutMs: number,
  ) {}

  handle(slip: SlipEnvelope, ctx: JobContext): Promise<unknown> {
    return slip.mode === 'forward' ? this.forward(slip, ctx) : this.compensate(slip, ctx);
  }

  private async forward(slip: SlipEnvelope, ctx: JobContext): Promise<unknown> {
    const step = slip.itinerary[slip.cursor];
    const args = mergeArgs(slip.variables, step.args);
    let result: unknown;
    try {
      result = await this.withTimeout(ctx, (inner) => this.activity.handle(args, inner));
    } catch (error) {
      if (!isFinal(error, ctx)) throw error;
      return this.fault(slip, error, ctx);
    }
    const entry: SlipLogEntry = {
      activity: step.activity,
      step: slip.cursor,
      args,
      result: boundResult(result),
      completedAt: Date.now(),
    };
    const base = { slipId: slip.slipId, steps: slip.itinerary.length };
    const next = slip.cursor + 1;
    if (next < slip.itinerary.length) {
      await ctx.publish(
        slipJobName(slip.itinerary[next].activity),
        { ...slip, cursor: next, log: [...slip.log, entry] },
        { jobId: slipStepId(slip.slipId, next, 'forward') },
      );
    }
    this.emit('activityCompleted', { ...base, step: slip.cursor, activity: step.activity });
    if (next === slip.itinerary.length) this.emit('slipCompleted', base);
    return entry.result;
  }

  /** The step failed for good: compensate the logged steps, newest first. */
  private async fault(slip: SlipEnvelope, error: unknown, ctx: JobContext): Promise<unknown> {
    const step = slip.itinerary[slip.cursor];
    const base = { slipId: slip.slipId, steps: slip.itinerary.length };
    const fault = { step: slip.cursor, activity: step.activity, error: describe(error) };
    ctx.log.warn({ err: error, slipId: slip.slipId, step: slip.cursor }, 'slip step failed; compensating');
    if (slip.log.length > 0) await this.publishUndo({ ...slip, fault }, slip.log.length - 1, ctx);
    this.emit('slipFaulted', { ...base, step: slip.cursor, activity: step.activity, error });
    if (slip.log.length === 0) this.emit('slipCompensated', { ...base, faultedStep: slip.cursor });
    return { faulted: fault };
  }

  private async compensate(slip: SlipEnvelope, ctx: JobContext): Promise<unknown> {
    const entry = slip.log[slip.cursor];
    const base = { slipId: slip.slipId, steps: slip.itinerary.length };
    try {
      if (this.activity.compensate)
        await this.withTimeout(ctx, (inner) => this.activity.compensate!(entry, inner));
    } catch (error) {
      if (!isFinal(error, ctx)) throw error;
      this.emit('slipCompensationFailed', { ...base, step: slip.cursor, activity: entry.activity, error });
      throw new CompensationFailedError(
        `slip ${slip.slipId}: compensating step ${slip.cursor} (${entry.activity}) failed ${ctx.attempt} times`,
        { cause: error },
      );
    }
    if (slip.cursor > 0) await this.publishUndo(slip, slip.cursor - 1, ctx);
    else this.emit('slipCompensated', { ...base, faultedStep: slip.fault?.step ?? slip.log.length });
    return undefined;
  }

  /** Runs `work` with the activity's timeout: its ctx.signal aborts then, and the call fails at once. */
  private async withTimeout<T>(ctx: JobContext, work: (ctx: JobContext) => Promise<T> | T): Promise<T> {
    const controller = new AbortController();
    const signal = AbortSignal.any([ctx.signal, controller.signal]);
    const inner: JobContext = Object.create(ctx, { signal: { value: signal } });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new JobTimeoutError(this.timeoutMs, { jobName: ctx.name, jobId: ctx.jobId });
        controller.abort(error);
        reject(error);
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([Promise.resolve().then(() => work(inner)), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async publishUndo(slip: SlipEnvelope, cursor: number, ctx: JobContext): Promise<void> {
    await ctx.publish(
      slipJobName(slip.itinerary[cursor].activity),
      { ...slip, mode: 'compensate', cursor },
      { jobId: slipStepId(slip.slipId, cursor, 'compensate') },
    );
  }
}

/** This failure ends the step: no attempt left, or the handler said so. A postponement never does. */
function isFinal(error: unknown, ctx: JobContext): boolean {
  if (error instanceof CircuitOpenError) return false;
  return error instanceof UnrecoverableError || ctx.attempt >= ctx.maxAttempts;
}

function mergeArgs(variables: Readonly<Record<string, unknown>>, args: unknown): unknown {
  if (Object.keys(variables).length === 0) return args;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return args ?? { ...variables };
  return { ...variables, ...args };
}

function boundResult(result: unknown): unknown {
  if (result === undefined) return null;
  const json = JSON.stringify(result);
  if (json === undefined) return null;
  return Buffer.byteLength(json) > SLIP_MAX_RESULT_BYTES ? { dropped: 'too-large' } : JSON.parse(json);
}

function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 1000);
}
