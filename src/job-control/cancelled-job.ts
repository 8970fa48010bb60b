import { HEADERS } from '../message';
import type { PlannedJob } from '../topology';
import type { ControlRecord } from './control-record';

/** What `warren.delayed.cancel` (and `ops.delayed.cancel`, `warren job cancel`) report. */
export interface CancelledJob {
  readonly jobId: string;
  /** When the cancel was recorded: from then on no worker runs the job. */
  readonly cancelledAt: Date;
  /**
   * When the job would have run, if known: from its stored copy (published `controllable`) or its latest
   * reschedule; undefined otherwise (a delayed job's due time is only in its message, in the delay
   * levels). Until then its message stays held there, and is dropped when it comes due. A time before
   * `cancelledAt` means it already came due: it ran (or runs), and only a later retry of it is dropped.
   */
  readonly dueAt: Date | undefined;
  /** The job's name, if known (from its stored copy). */
  readonly name: string | undefined;
  /** The job's queue (topology key), if known (from its stored copy). */
  readonly queue: string | undefined;
}

/**
 * When a job comes due (ms; NaN when unknown): the time of its latest promote or reschedule, else the due
 * time its stored copy carries (`warren-delayed`).
 */
export function dueTimeOf(decision: ControlRecord | undefined, stored: ControlRecord | undefined): number {
  return dueAfter(decision, Number(stored?.h?.[HEADERS.delayed] ?? Number.NaN));
}

/** The same from a stored copy's due time already read (`storedDue`, NaN or undefined when unknown). */
export function dueAfter(decision: ControlRecord | undefined, storedDue: number | undefined): number {
  if (decision?.a === 'promote') return decision.t;
  if (decision?.a === 'reschedule' && decision.u !== undefined) return decision.u;
  return storedDue ?? Number.NaN;
}

/**
 * What a process can tell of a job it cancels: the due time of its latest promote or reschedule, else the
 * one its stored copy carries (`warren-delayed`); its name and queue from the stored copy. Pure.
 */
export function knownOfJob(
  decision: ControlRecord | undefined,
  stored: ControlRecord | undefined,
  jobs: ReadonlyMap<string, PlannedJob>,
): Partial<CancelledJob> {
  const name = typeof stored?.p?.type === 'string' ? stored.p.type : undefined;
  const planned = name === undefined ? undefined : jobs.get(name);
  const due = dueTimeOf(decision, stored);
  return {
    ...(Number.isSafeInteger(due) ? { dueAt: new Date(due) } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(planned !== undefined && planned.queueName === stored?.q ? { queue: planned.queue } : {}),
  };
}
