import {
  CircuitOpenError,
  CompensationFailedError,
  JobTimeoutError,
  summarizeIssues,
  UnrecoverableError,
  validatePayload,
  type StandardSchemaV1,
  type EmitEvent,
  type JobContext,
  type JobHandler,
} from '../core';
import { SLIP_MAX_RESULT_BYTES, unitAt, type SlipEnvelope, type SlipLogEntry } from './slip-envelope';
import type { SlipRouter } from './slip-router';

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
    private readonly router: SlipRouter,
    private readonly emit: EmitEvent,
    /** The activity's own timeout; the slip job's is longer, so a timed-out last attempt still compensates. */
    private readonly timeoutMs: number,
    /** The activity's schema: a step's arguments pass it as the plain job's payload does. */
    private readonly schema?: StandardSchemaV1,
  ) {}

  handle(slip: SlipEnvelope, ctx: JobContext): Promise<unknown> {
    return slip.mode === 'forward' ? this.forward(slip, ctx) : this.compensate(slip, ctx);
  }

  private async forward(slip: SlipEnvelope, ctx: JobContext): Promise<unknown> {
    const unit = unitAt(slip.itinerary[slip.cursor], slip.branch)!;
    let args = mergeArgs(slip.variables, unit.args);
    let result: unknown;
    try {
      args = await this.checkArgs(unit.activity, args);
      result = await this.withTimeout(ctx, (inner) => this.activity.handle(args, inner));
    } catch (error) {
      if (!isFinal(error, ctx)) throw error;
      await this.router.fault(slip, unit.activity, error, ctx);
      return { faulted: slip.cursor };
    }
    const entry: SlipLogEntry = {
      activity: unit.activity,
      step: slip.cursor,
      args,
      result: boundResult(result),
      completedAt: Date.now(),
    };
    if (slip.branch === undefined) await this.router.advance(slip, entry, ctx);
    else await this.router.branchDone(slip, entry, ctx);
    return entry.result;
  }

  private async compensate(slip: SlipEnvelope, ctx: JobContext): Promise<unknown> {
    const entry = entryToUndo(slip);
    try {
      if (this.activity.compensate)
        await this.withTimeout(ctx, (inner) => this.activity.compensate!(entry, inner));
    } catch (error) {
      if (!isFinal(error, ctx)) throw error;
      const base = { slipId: slip.slipId, steps: slip.itinerary.length };
      this.emit('slipCompensationFailed', { ...base, step: slip.cursor, activity: entry.activity, error });
      throw new CompensationFailedError(
        `slip ${slip.slipId}: compensating step ${slip.cursor} (${entry.activity}) failed ${ctx.attempt} times`,
        { cause: error },
      );
    }
    await this.router.undone(slip, ctx);
    return undefined;
  }

  /**
   * A step's arguments checked against the activity's schema (its output is what the activity gets):
   * invalid ones end the step at once, as the plain job would be dead-lettered as `invalid-payload`.
   */
  private async checkArgs(activity: string, args: unknown): Promise<unknown> {
    if (this.schema === undefined) return args;
    const checked = await validatePayload(this.schema, args);
    if (checked.issues === undefined) return checked.value;
    throw new UnrecoverableError(
      `slip step ${activity}: its arguments do not match the activity's schema: ${summarizeIssues(checked.issues)}`,
    );
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
}

/** This failure ends the step: no attempt left, or the handler said so. A postponement never does. */
function isFinal(error: unknown, ctx: JobContext): boolean {
  if (error instanceof CircuitOpenError) return false;
  return error instanceof UnrecoverableError || ctx.attempt >= ctx.maxAttempts;
}

/** A step's arguments as its activity receives them: the slip's variables merged under its own args. */
export function mergeArgs(variables: Readonly<Record<string, unknown>>, args: unknown): unknown {
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

/** The log entry a compensation undoes: its step's, or its branch's. */
function entryToUndo(slip: SlipEnvelope): SlipLogEntry {
  if (slip.branch === undefined) return slip.log[slip.cursor];
  if (slip.branchLog) return slip.branchLog;
  return (slip.log[slip.cursor].result as SlipLogEntry[])[slip.branch];
}
