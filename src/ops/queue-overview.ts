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
  jobQueues: readonly PlannedJobQueue[],
  manager: ConnectionManager,
  markers: PauseMarkers,
  management: BrokerState | undefined,
): Promise<QueueOverview[]> {
  const unackedOf = (name: string) =>
    management ? (management.queues.find((b) => b.name === name)?.unacked ?? 0) : undefined;
  return Promise.all(
    jobQueues
      .filter((q) => q.lane === undefined)
      .map(async (q): Promise<QueueOverview> => {
        const lanes = jobQueues.filter((lane) => lane.lane?.of === q.name);
        const [counts, dead, paused, laneCounts] = await Promise.all([
          count(manager, q.name),
          count(manager, q.deadQueue),
          markers.isPaused(q.key),
          Promise.all(lanes.map((lane) => count(manager, lane.name))),
        ]);
        const unacked = unackedOf(q.name);
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
          ...(lanes.length === 0
            ? {}
            : {
                lanes: lanes.map((lane, i) => ({
                  name: lane.name,
                  index: lane.lane!.index,
                  draining: lane.lane!.draining,
                  ...(lane.lane!.partition ? { partition: true as const } : {}),
                  ...(lane.lane!.ordered ? { ordered: true as const } : {}),
                  exists: laneCounts[i] !== undefined,
                  ready: laneCounts[i]?.messageCount ?? 0,
                  consumers: laneCounts[i]?.consumerCount ?? 0,
                  unacked: unackedOf(lane.name),
                })),
              }),
        };
      }),
  );
}

/** A queue's counts, or undefined when it does not exist. */
function count(manager: ConnectionManager, queue: string) {
  return checkQueueIfExists(() => manager.openChannel(), queue);
}
