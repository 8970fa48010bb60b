import type { EventEmitter } from 'node:events';
import { withThrowawayChannel, type ConnectionManager } from '../connection';
import type { InstrumentationTarget, WarrenEvents } from '../core';
import { isDeclaredJobQueue, type TopologyPlan } from '../topology';
import type { ConsumerHealth } from '../worker';

/**
 * What `attach` gives an instrumentation: the instance's events, the bounded job and queue names, and
 * passive declares for scrape-time queue depths (each on a channel of its own: a 404 closes it).
 */
export function instrumentationTarget(
  warren: EventEmitter<WarrenEvents>,
  plan: TopologyPlan,
  manager: ConnectionManager,
  isLeader: () => boolean,
  consumers: () => readonly ConsumerHealth[] = () => [],
): InstrumentationTarget {
  return {
    on: (event, listener) => warren.on(event, listener as never),
    jobNames: [...plan.jobs.keys()],
    // a lane is counted with its queue's own row in `warren queues`, not as a queue of its own
    queues: plan.queues
      .filter(isDeclaredJobQueue)
      .map((q) => ({ key: q.key, name: q.name, deadName: q.deadQueue })),
    delayQueues: plan.queues.filter((q) => q.role === 'delay').map((q) => q.name),
    messageCount: (queueName) =>
      withThrowawayChannel(
        () => manager.openChannel(),
        async (channel) => (await channel.checkQueue(queueName)).messageCount,
      ),
    isConnected: () => manager.isConnected,
    isLeader,
    keyLimits: () =>
      consumers().flatMap((c) => {
        const limits = c.partitions?.limits;
        return limits === undefined ? [] : [{ queue: c.queue, ...limits }];
      }),
  };
}
