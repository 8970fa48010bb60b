import { checkQueueIfExists, type ConnectionManager } from '../connection';
import type { PauseMarkers } from '../process-control';
import type { PlannedJobQueue } from '../topology';
import type { BrokerState } from './management-api';
import type { QueueOverview } from './ops-results';

/**
 * What `ops.queues()` reports of each job queue: ready and consumers by a passive declare, its dead
 * letters, the operator's pause marker, and unacked when the management API's `state` is given.
 */
export function overviewQueues(
  queues: readonly PlannedJobQueue[],
  manager: ConnectionManager,
  markers: PauseMarkers,
  management: BrokerState | undefined,
): Promise<QueueOverview[]> {
  return Promise.all(
    queues.map(async (q): Promise<QueueOverview> => {
      const [counts, dead, paused] = await Promise.all([
        count(manager, q.name),
        count(manager, q.deadQueue),
        markers.isPaused(q.key),
      ]);
      const unacked = management?.queues.find((b) => b.name === q.name)?.unacked;
      return {
        key: q.key,
        name: q.name,
        type: q.type,
        exists: counts !== undefined,
        ready: counts?.messageCount ?? 0,
        consumers: counts?.consumerCount ?? 0,
        unacked: management ? (unacked ?? 0) : undefined,
        dead: dead?.messageCount ?? 0,
        paused,
      };
    }),
  );
}

/** A queue's counts, or undefined when it does not exist. */
function count(manager: ConnectionManager, queue: string) {
  return checkQueueIfExists(() => manager.openChannel(), queue);
}
