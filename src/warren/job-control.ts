import type { ConfirmPublisher, ConnectionManager } from '../connection';
import { ConfigurationError, MAX_DELAY_MS, validationMessage } from '../core';
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

/** The new due time (ms since epoch) of `reschedule`, checked. */
export function rescheduleAt(jobId: string, options: RescheduleOptions): number {
  const at = `reschedule('${jobId}')`;
  const runAt =
    'runAt' in options ? options.runAt?.getTime() : Date.now() + (options as { delayMs: number }).delayMs;
  if (runAt === undefined || !Number.isFinite(runAt))
    throw new ConfigurationError(validationMessage(at, 'needs runAt (a Date) or delayMs (a number)', runAt));
  if (runAt - Date.now() > MAX_DELAY_MS)
    throw new ConfigurationError(
      validationMessage(`${at} delay`, 'must be at most 366 days', runAt - Date.now()),
    );
  return runAt;
}
