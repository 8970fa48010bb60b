import { TopologyError } from '../core';
import type { QueueDeclaration } from './define-topology';
import { delayDeliveryPattern, type DelayPlan } from './delay-levels';
import { checkDeclarationKeys, checkQueueCount } from './plan-checks';
import type { TopologyNaming } from './naming';
import type { ResolvedTopologyOptions } from './options';
import { jobQueueAssertion } from './queue-arguments';
import type {
  PlannedBinding,
  PlannedExchange,
  PlannedJobQueue,
  PlannedPartitions,
  PlannedQueue,
} from './topology-plan';

/** Most partitions a queue may have: a worker holds a channel and a prefetch window per owned partition. */
export const MAX_PARTITIONS = 64;

/**
 * The ordered partitions of a queue (docs/guide/ordered-partitions.md), checked: a count from 1 to
 * MAX_PARTITIONS, a previous count other than it (or 'unpartitioned'), and none of the settings that
 * contradict one owner per partition. Undefined for a queue without partitions.
 */
export function planPartitions(
  key: string,
  decl: QueueDeclaration,
  naming: TopologyNaming,
): PlannedPartitions | undefined {
  const partitions = decl.partitions;
  if (partitions === undefined) return undefined;
  const path = `topology.queues.${key}.partitions`;
  const options = typeof partitions === 'number' ? { count: partitions } : partitions;
  if (typeof options !== 'object' || options === null)
    throw new TopologyError(
      `${path} must be a count or { count, previous } (got ${JSON.stringify(partitions)})`,
      {
        queue: key,
      },
    );
  if (typeof partitions !== 'number')
    checkDeclarationKeys(path, options, ['count', 'previous', 'order'], key);
  const refuse = (what: string, why: string) => {
    throw new TopologyError(`${path} cannot be combined with ${what}: ${why}`, { queue: key });
  };
  if (decl.fairness !== undefined)
    refuse(
      'fairness',
      'fair share runs each key on every worker, partitions run each key on one worker to keep its order; put the fair and the ordered job types on two queues',
    );
  if (decl.maxPriority !== undefined)
    refuse('maxPriority', 'a priority would overtake the jobs of its key published before it');
  if (decl.singleActiveConsumer)
    refuse('singleActiveConsumer', 'each partition has a single active consumer already; remove it');
  if (decl.inPlaceRetryMs !== undefined)
    refuse('inPlaceRetryMs', 'a partition retries in the worker, holding the key; remove it');
  const count = options.count;
  checkQueueCount(`${path}${typeof partitions === 'number' ? '' : '.count'}`, count, key, 1, MAX_PARTITIONS);
  const previous = options.previous;
  if (previous !== undefined && previous !== 'unpartitioned') {
    checkQueueCount(`${path}.previous`, previous, key, 1, MAX_PARTITIONS);
    if (previous === count)
      throw new TopologyError(`${path}.previous must differ from count (both ${count}): remove it`, {
        queue: key,
      });
  }
  const order = options.order ?? 'per-key';
  if (order !== 'per-key' && order !== 'none')
    throw new TopologyError(`${path}.order must be 'per-key' or 'none' (got ${JSON.stringify(order)})`, {
      queue: key,
    });
  const names = (n: number) => Array.from({ length: n }, (_, i) => naming.partition(key, n, i));
  return {
    current: names(count),
    previous: typeof previous === 'number' ? names(previous) : [],
    drainsQueue: previous === 'unpartitioned',
    membersExchange: naming.partitionMembers(key),
    ordered: order === 'per-key',
  };
}

/**
 * The partition queues of a partitioned queue, after the queue itself: declared like it plus single active
 * consumer (same type, arguments and parking queue), without its bindings (warren publishes to a partition by
 * name), each with the binding that brings its delayed jobs back; and the membership exchange.
 */
export function planPartitionQueues(
  parts: {
    readonly exchanges: PlannedExchange[];
    readonly queues: PlannedQueue[];
    readonly bindings: PlannedBinding[];
  },
  queue: PlannedJobQueue,
  decl: QueueDeclaration,
  delay: DelayPlan,
  options: ResolvedTopologyOptions,
): void {
  const partitions = queue.partitions;
  if (partitions === undefined) return;
  parts.exchanges.push({
    name: partitions.membersExchange,
    type: 'fanout',
    durable: true,
    autoDelete: false,
    internal: false,
    arguments: {},
  });
  const { fairness: _f, partitions: _p, ...shared } = queue;
  const assertion = jobQueueAssertion({
    declaration: { ...decl, singleActiveConsumer: true },
    type: queue.type,
    deadLetterExchange: queue.deadExchange,
    defaultDeliveryLimit: options.deliveryLimit,
    expiresMs: options.queueExpiresMs,
    path: `topology.queues.${queue.key}`,
  });
  const sets = [
    { names: partitions.current, draining: false },
    { names: partitions.previous, draining: true },
  ];
  for (const { names, draining } of sets)
    names.forEach((name, index) => {
      parts.queues.push({
        ...shared,
        name,
        assertion,
        lane: {
          of: queue.name,
          index,
          count: names.length,
          draining,
          partition: true,
          ...(partitions.ordered ? { ordered: true as const } : {}),
        },
      });
      parts.bindings.push({
        source: delay.deliveryExchange,
        destination: name,
        destinationType: 'queue',
        pattern: delayDeliveryPattern(delay, name),
      });
    });
}
