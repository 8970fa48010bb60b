import type { EmitEvent, JobContext } from '../core';
import type { JoinStore } from '../idempotency';
import {
  NO_SLIP_SEAL,
  slipJobName,
  slipStepId,
  type SlipEnvelope,
  type SlipLogEntry,
  type SlipSeal,
} from './slip-envelope';

/**
 * Where a slip goes after a message of it succeeded or failed for good: the next step (fanned out to
 * every branch of a parallel step), the fan-in of a parallel step (counted in the join store), or
 * the compensations, newest step first. Every next message is published and confirmed before the
 * handler returns, so the worker acks the current delivery only after it (confirm before forget).
 */
export class SlipRouter {
  constructor(
    private readonly joins: JoinStore,
    private readonly emit: EmitEvent,
    private readonly seal: SlipSeal = NO_SLIP_SEAL,
  ) {}

  /** Publishes the next message of a slip, sealed (with a signing key). */
  private send(ctx: JobContext, name: string, slip: SlipEnvelope, jobId: string) {
    return ctx.publish(name, this.seal.seal(slip), { jobId });
  }

  /** Step `slip.cursor` completed with `entry` (a parallel step: every branch did). */
  async advance(slip: SlipEnvelope, entry: SlipLogEntry, ctx: JobContext): Promise<void> {
    const base = baseOf(slip);
    const next = slip.cursor + 1;
    const log = [...slip.log, entry];
    if (next < slip.itinerary.length) {
      const { branch: _branch, ...rest } = slip;
      await this.publishStep({ ...rest, cursor: next, log }, ctx, 'forward');
    }
    this.emit('activityCompleted', { ...base, step: slip.cursor, activity: entry.activity });
    if (next === slip.itinerary.length) this.emit('slipCompleted', base);
  }

  /** A branch of the parallel step at the cursor completed: count it; the last one advances the slip. */
  async branchDone(slip: SlipEnvelope, entry: SlipLogEntry, ctx: JobContext): Promise<void> {
    const step = slip.itinerary[slip.cursor];
    const branches = step.branches!.length;
    const arrival = await this.joins.arrive(joinId(slip), branches, slip.branch!, entry);
    if (arrival.status === 'faulted') return this.publishBranchUndo(slip, slip.branch!, entry, ctx);
    if (arrival.status === 'open') return;
    const joined: SlipLogEntry = { ...entry, activity: step.activity, args: null, result: arrival.results };
    await this.advance(slip, joined, ctx);
  }

  /** The step at the cursor (or one branch of it) failed for good: compensate what completed. */
  async fault(slip: SlipEnvelope, activity: string, error: unknown, ctx: JobContext): Promise<void> {
    const step = slip.itinerary[slip.cursor];
    const fault = { step: slip.cursor, activity: step.activity, error: describe(error) };
    const faulted = { ...slip, fault };
    ctx.log.warn({ err: error, slipId: slip.slipId, step: slip.cursor }, 'slip step failed; compensating');
    this.emit('slipFaulted', { ...baseOf(slip), step: slip.cursor, activity, error });
    if (step.branches === undefined) return this.undoFrom(faulted, slip.cursor - 1, ctx);
    const failure = await this.joins.fail(joinId(slip), step.branches.length, slip.branch!);
    for (const { branch, result } of failure.done)
      await this.publishBranchUndo(faulted, branch, result as SlipLogEntry, ctx);
    if (failure.settled) await this.undoFrom(faulted, slip.cursor - 1, ctx);
  }

  /** The compensation of the message's step (or branch) completed: go on with the step before it. */
  async undone(slip: SlipEnvelope, ctx: JobContext): Promise<void> {
    const step = slip.itinerary[slip.cursor];
    if (step.branches !== undefined) {
      const branches = step.branches.length;
      // A branch of the faulted step settles its join; one of a completed step counts its own.
      const settled =
        slip.cursor === slip.log.length
          ? (await this.joins.undone(joinId(slip), branches, slip.branch!)).settled
          : (await this.joins.arrive(`${joinId(slip)}.undo`, branches, slip.branch!, null)).status ===
            'complete';
      if (!settled) return;
    }
    const { branch: _branch, branchLog: _log, ...rest } = slip;
    await this.undoFrom(rest, slip.cursor - 1, ctx);
  }

  /** Publishes the compensation of step `cursor` (every branch of a parallel one), or ends the slip. */
  private async undoFrom(slip: SlipEnvelope, cursor: number, ctx: JobContext): Promise<void> {
    if (cursor < 0) {
      this.emit('slipCompensated', { ...baseOf(slip), faultedStep: slip.fault?.step ?? slip.log.length });
      return;
    }
    await this.publishStep({ ...slip, mode: 'compensate', cursor }, ctx, 'compensate');
  }

  private async publishBranchUndo(
    slip: SlipEnvelope,
    branch: number,
    entry: SlipLogEntry,
    ctx: JobContext,
  ): Promise<void> {
    const activity = slip.itinerary[slip.cursor].branches![branch].activity;
    const fault = slip.fault ?? {
      step: slip.cursor,
      activity: slip.itinerary[slip.cursor].activity,
      error: '',
    };
    await this.send(
      ctx,
      slipJobName(activity),
      { ...slip, fault, mode: 'compensate', branch, branchLog: entry },
      `${slipStepId(slip.slipId, slip.cursor, 'compensate')}.${branch}`,
    );
  }

  /** One message for a plain step; one per branch, all confirmed, for a parallel step. */
  private async publishStep(slip: SlipEnvelope, ctx: JobContext, mode: SlipEnvelope['mode']): Promise<void> {
    const step = slip.itinerary[slip.cursor];
    const id = slipStepId(slip.slipId, slip.cursor, mode);
    if (step.branches === undefined) {
      await this.send(ctx, slipJobName(step.activity), slip, id);
      return;
    }
    await Promise.all(
      step.branches.map((unit, branch) =>
        this.send(ctx, slipJobName(unit.activity), { ...slip, branch }, `${id}.${branch}`),
      ),
    );
  }
}

function joinId(slip: SlipEnvelope): string {
  return `${slip.slipId}.${slip.cursor}`;
}

function baseOf(slip: SlipEnvelope) {
  return { slipId: slip.slipId, steps: slip.itinerary.length };
}

function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 1000);
}
