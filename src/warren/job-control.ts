import type { ConfirmPublisher, ConnectionManager } from '../connection';
import { checkKnownKeys, ConfigurationError, MAX_DELAY_MS, validationMessage } from '../core';
import { JobControl } from '../job-control';
import type { RecordTrust } from '../records';
import { requireStream, type TopologyPlan } from '../topology';

/** When a rescheduled delayed job runs: at `runAt`, or `delayMs` from now. */
export type RescheduleOptions = { readonly runAt: Date } | { readonly delayMs: number };

/**
 * The job control of an instance (docs/guide/job-control.md): idle until a delayed job comes
 * due or an action is asked for.
 */
export function createJobControl(
  plan: TopologyPlan,
  manager: ConnectionManager,
  confirms: ConfirmPublisher,
  timeoutMs: number,
  trust: RecordTrust,
): JobControl {
  const stream = requireStream(plan, 'job-control');
  return new JobControl({
    stream: stream.name,
    assertion: stream.assertion,
    delay: plan.delay,
    openChannel: () => manager.openChannel(),
    send: (message) => confirms.send(message),
    timeoutMs,
    jobs: plan.jobs,
    trust,
    checkpoints: requireStream(plan, 'job-control-checkpoints'),
    username: () => manager.username,
  });
}

/**
 * The new due time (ms since epoch) of `reschedule`, checked as `publish` checks its delay: one of `runAt` (a
 * valid Date) or `delayMs` (a finite number >= 0), no other key. Whole milliseconds, rounded up: the
 * job-control record holds an integer, and a fraction would make every reader drop the record (and the
 * job run at its old time as well).
 */
export function rescheduleAt(jobId: string, options: RescheduleOptions): number {
  const at = `reschedule('${String(jobId)}')`;
  checkKnownKeys(at, options, { runAt: true, delayMs: true });
  const given = (options ?? {}) as { runAt?: unknown; delayMs?: unknown };
  if (given.runAt !== undefined && given.delayMs !== undefined)
    throw new ConfigurationError(`${at}: give delayMs or runAt, not both`);
  let runAt: number;
  if (given.runAt !== undefined) {
    if (!(given.runAt instanceof Date) || Number.isNaN(given.runAt.getTime()))
      throw new ConfigurationError(validationMessage(`${at} runAt`, 'must be a valid Date', given.runAt));
    runAt = given.runAt.getTime();
  } else if (given.delayMs !== undefined) {
    const delayMs = given.delayMs;
    if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0)
      throw new ConfigurationError(
        validationMessage(`${at} delayMs`, 'must be a finite number >= 0', delayMs),
      );
    runAt = Math.ceil(Date.now() + delayMs);
  } else throw new ConfigurationError(`${at} needs { runAt: Date } or { delayMs: number }`);
  if (runAt - Date.now() > MAX_DELAY_MS)
    throw new ConfigurationError(
      validationMessage(`${at} delay`, 'must be at most 366 days', runAt - Date.now()),
    );
  return runAt;
}
