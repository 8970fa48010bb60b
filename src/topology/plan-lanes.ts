import { jobKeyProblem, TopologyError } from '../core';
import type { QueueDeclaration } from './define-topology';
import { delayDeliveryPattern, type DelayPlan } from './delay-levels';
import { checkDeclarationKeys, checkQueueCount } from './plan-checks';
import type { TopologyNaming } from './naming';
import type { PlannedBinding, PlannedFairness, PlannedJobQueue, PlannedQueue } from './topology-plan';

/** Lanes of a queue with `fairness: true`. */
export const DEFAULT_LANES = 8;
/** Most lanes a queue may have: the consumer holds a channel and a prefetch window per lane. */
export const MAX_LANES = 64;

/**
 * The lanes of a queue with fairness (docs/guide/fair-share.md), checked: a lane count from 2 to
 * MAX_LANES, a previous count other than it, positive weights for valid keys, and none of the settings fair
 * share cannot keep (priorities: the scheduler orders by key, not priority; single active consumer: the
 * ordered partitions of a later release). Undefined for a queue without fairness.
 */
export function planFairness(
  key: string,
  decl: QueueDeclaration,
  naming: TopologyNaming,
): PlannedFairness | undefined {
  const fairness = decl.fairness;
  if (fairness === undefined) return undefined;
  const path = `topology.queues.${key}.fairness`;
  if (fairness !== true && (typeof fairness !== 'object' || fairness === null))
    throw new TopologyError(`${path} must be true or an object (got ${JSON.stringify(fairness)})`, {
      queue: key,
    });
  const options = fairness === true ? {} : fairness;
  checkDeclarationKeys(path, options, ['lanes', 'previousLanes', 'weights'], key);
  if (decl.maxPriority !== undefined)
    throw new TopologyError(
      `${path} cannot be combined with maxPriority: the fair-share scheduler picks jobs by key, which would silently override their priorities; use two queues (one with priorities, one fair)`,
      { queue: key },
    );
  if (decl.singleActiveConsumer)
    throw new TopologyError(
      `${path} cannot be combined with singleActiveConsumer: every worker takes from every lane, so one active consumer would hold every lane's order`,
      { queue: key },
    );
  const count = options.lanes ?? DEFAULT_LANES;
  checkQueueCount(`${path}.lanes`, count, key, 2, MAX_LANES);
  const previous = options.previousLanes;
  if (previous !== undefined) {
    checkQueueCount(`${path}.previousLanes`, previous, key, 2, MAX_LANES);
    if (previous === count)
      throw new TopologyError(`${path}.previousLanes must differ from lanes (both ${count}): remove it`, {
        queue: key,
      });
  }
  const weights: Record<string, number> = {};
  for (const [weightKey, weight] of Object.entries(options.weights ?? {})) {
    const problem = jobKeyProblem(weightKey);
    if (problem !== undefined)
      throw new TopologyError(`${path}.weights key ${JSON.stringify(weightKey)} ${problem}`, { queue: key });
    if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0 || weight > 1000)
      throw new TopologyError(
        `${path}.weights['${weightKey}'] must be a number above 0 and at most 1000 (got ${JSON.stringify(weight)})`,
        { queue: key },
      );
    weights[weightKey] = weight;
  }
  const names = (n: number) => Array.from({ length: n }, (_, i) => naming.lane(key, n, i));
  return { lanes: names(count), previousLanes: previous === undefined ? [] : names(previous), weights };
}

/**
 * The lane queues of a queue with fairness, after the queue (its intake): declared like it (same type,
 * arguments, parking queue), without its bindings (only warren publishes to a lane, by name), each with
 * the binding that brings its delayed jobs and retries back.
 */
export function planLaneQueues(
  parts: { readonly queues: PlannedQueue[]; readonly bindings: PlannedBinding[] },
  intake: PlannedJobQueue,
  delay: DelayPlan,
): void {
  const fairness = intake.fairness;
  if (fairness === undefined) return;
  const sets = [
    { names: fairness.lanes, draining: false },
    { names: fairness.previousLanes, draining: true },
  ];
  for (const { names, draining } of sets)
    names.forEach((name, index) => {
      const { fairness: _, ...shared } = intake;
      parts.queues.push({
        ...shared,
        name,
        lane: { of: intake.name, index, count: names.length, draining },
      });
      parts.bindings.push({
        source: delay.deliveryExchange,
        destination: name,
        destinationType: 'queue',
        pattern: delayDeliveryPattern(delay, name),
      });
    });
}
