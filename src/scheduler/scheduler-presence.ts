import { checkQueueIfExists, type OpenChannel } from '../connection';

/**
 * Whether some process takes part in the cron election now: the election queue
 * (`<namespace>.warren.leader`) has a consumer. Every process whose scheduler is enabled consumes it, the
 * leader and its standbys alike; the queue is single-active-consumer, and RabbitMQ (3.10 and 4.3) counts
 * only the active consumer in a passive declare, so this says whether one runs, not how many.
 */
export async function isSchedulerRunning(open: OpenChannel, leaderQueue: string): Promise<boolean> {
  const queue = await checkQueueIfExists(open, leaderQueue);
  return (queue?.consumerCount ?? 0) > 0;
}

/** What `warren.cron.add` (and `ops.addSchedule`, `warren schedules add`) report about the schedule stored. */
export interface AddedSchedule {
  readonly id: string;
  readonly job: string;
  /**
   * Whether a process fires it: true when the adding process runs the scheduler (it fires it while it
   * leads, from `start()`) or when some process takes part in the cron election now; false when none does
   * (the schedule is stored and fires once one does); undefined when the broker could not be asked.
   */
  readonly isFired: boolean | undefined;
  /** Set when `isFired` is false: what is wrong and what to do (also logged by `warren.cron.add`). */
  readonly warning: string | undefined;
}

/** The warning of a schedule stored where no process fires it. */
export function noSchedulerWarning(id: string): string {
  return (
    `schedule '${id}' stored, but no process runs the scheduler, so it does not fire until one does ` +
    '(a process with a @Cron job or scheduler.enabled: true)'
  );
}
