import { TopologyError } from '../core';
import type { ExchangeDeclaration, QueueDeclaration } from './define-topology';
import { delayDeliveryPattern, delayLevelPattern, type DelayPlan } from './delay-levels';
import type { TopologyNaming } from './naming';
import type { ResolvedTopologyOptions } from './options';
import { bindingsOf, defaultPattern, KEY_PATTERN, queueType, requireExchange } from './plan-checks';
import {
  delayLevelAssertion,
  jobQueueAssertion,
  leaderQueueAssertion,
  ledgerQueueAssertion,
  permitQueueAssertion,
  plainQueueAssertion,
} from './queue-arguments';
import { planFairness, planLaneQueues } from './plan-lanes';
import { planPartitionQueues, planPartitions } from './plan-partitions';
import type { PlannedBinding, PlannedExchange, PlannedJobQueue, PlannedQueue } from './topology-plan';

/** The entities planned so far, in declaration order; each planning step appends to them. */
export interface PlanParts {
  readonly exchanges: PlannedExchange[];
  readonly queues: PlannedQueue[];
  readonly bindings: PlannedBinding[];
}

/** A durable topic exchange warren routes through itself (delay levels, delivery). */
export function internalTopicExchange(name: string): PlannedExchange {
  return { name, type: 'topic', durable: true, autoDelete: false, internal: false, arguments: {} };
}

/** A durable fanout exchange (a queue's dead letters, operator requests). */
export function fanoutExchange(name: string): PlannedExchange {
  return { name, type: 'fanout', durable: true, autoDelete: false, internal: false, arguments: {} };
}

/** A durable headers exchange of warren's own (the live job events). */
export function headersExchange(name: string): PlannedExchange {
  return { name, type: 'headers', durable: true, autoDelete: false, internal: false, arguments: {} };
}

/**
 * The delay levels: an exchange and a queue per level, each level's messages waiting out its TTL and moving
 * one level down, the last one to the delivery exchange that routes them back to their queue.
 */
export function planDelayQueues(parts: PlanParts, delay: DelayPlan, options: ResolvedTopologyOptions): void {
  for (const level of delay.levels) parts.exchanges.push(internalTopicExchange(level.name));
  parts.exchanges.push(internalTopicExchange(delay.deliveryExchange));
  for (const level of delay.levels) {
    const next = level.level === 0 ? delay.deliveryExchange : delay.levels[level.level - 1]!.name;
    parts.queues.push({
      name: level.name,
      role: 'delay',
      type: delay.queueType,
      assertion: delayLevelAssertion(delay.queueType, level.ttlMs, next, options.queueExpiresMs),
    });
    parts.bindings.push({
      source: level.name,
      destination: level.name,
      destinationType: 'queue',
      pattern: delayLevelPattern(delay, level.level, 1),
    });
    parts.bindings.push({
      source: level.name,
      destination: next,
      destinationType: 'exchange',
      pattern: delayLevelPattern(delay, level.level, 0),
    });
  }
  for (const hold of delay.holds)
    parts.queues.push({
      name: hold.name,
      role: 'delay',
      type: hold.type,
      assertion: delayLevelAssertion(hold.type, hold.ttlMs, '', options.queueExpiresMs, hold.queueName),
    });
}

/** What planning one job queue needs besides its own declaration. */
export interface JobQueueContext {
  readonly naming: TopologyNaming;
  readonly options: ResolvedTopologyOptions;
  readonly delay: DelayPlan;
  readonly exchangeDecls: Readonly<Record<string, ExchangeDeclaration>>;
}

/**
 * One declared queue: its dead-letter exchange and parking queue (declared before it), the queue itself, its
 * declared bindings and the binding that brings its delayed messages back.
 */
export function planJobQueue(
  parts: PlanParts,
  key: string,
  decl: QueueDeclaration,
  context: JobQueueContext,
): void {
  const { naming, options } = context;
  const path = `topology.queues.${key}`;
  if (!KEY_PATTERN.test(key))
    throw new TopologyError(`${path}: a queue key may contain only letters, digits and . _ : -`, {
      queue: key,
    });
  const type = queueType(decl, path);
  checkInPlaceRetry(decl, type, path, key);
  const deadExchange = naming.deadExchange(key);
  const deadQueue = naming.deadQueue(key);
  parts.exchanges.push(fanoutExchange(deadExchange));
  parts.queues.push({
    name: deadQueue,
    role: 'dead',
    type,
    assertion: plainQueueAssertion(type, {}, options.queueExpiresMs),
  });
  parts.bindings.push({
    source: deadExchange,
    destination: deadQueue,
    destinationType: 'queue',
    pattern: '',
  });
  const name = naming.queue(key);
  const fairness = planFairness(key, decl, naming);
  const partitions = planPartitions(key, decl, naming);
  const queue: PlannedJobQueue = {
    name,
    key,
    role: 'job',
    type,
    deadQueue,
    deadExchange,
    ...(decl.maxPriority !== undefined ? { maxPriority: decl.maxPriority } : {}),
    ...(decl.inPlaceRetryMs !== undefined ? { inPlaceRetryMs: decl.inPlaceRetryMs } : {}),
    ...(type === 'quorum' ? { deliveryLimit: decl.deliveryLimit ?? options.deliveryLimit } : {}),
    assertion: jobQueueAssertion({
      declaration: decl,
      type,
      deadLetterExchange: deadExchange,
      defaultDeliveryLimit: options.deliveryLimit,
      expiresMs: options.queueExpiresMs,
      path,
    }),
    ...(fairness !== undefined ? { fairness } : {}),
    ...(partitions !== undefined ? { partitions } : {}),
  };
  parts.queues.push(queue);
  planJobQueueBindings(parts, name, decl, path, context);
  planLaneQueues(parts, queue, context.delay);
  planPartitionQueues(parts, queue, decl, context.delay, options);
}

/** In-place retries need a quorum queue (RabbitMQ's `x-delayed-retry-*`) and a whole number of ms. */
function checkInPlaceRetry(decl: QueueDeclaration, type: string, path: string, key: string): void {
  const delayMs = decl.inPlaceRetryMs;
  if (delayMs === undefined) return;
  if (!Number.isInteger(delayMs) || delayMs < 1)
    throw new TopologyError(
      `${path}.inPlaceRetryMs must be a positive whole number of ms (got ${String(delayMs)})`,
      {
        queue: key,
      },
    );
  if (type !== 'quorum')
    throw new TopologyError(
      `${path}.inPlaceRetryMs needs a quorum queue (RabbitMQ delays requeued deliveries on quorum queues only); this one is ${type}`,
      { queue: key },
    );
}

/** A job queue's declared bindings, then the one that brings its delayed messages back. */
function planJobQueueBindings(
  parts: PlanParts,
  name: string,
  decl: QueueDeclaration,
  path: string,
  { naming, delay, exchangeDecls }: JobQueueContext,
): void {
  for (const binding of bindingsOf(decl)) {
    requireExchange(binding.exchange, exchangeDecls, `${path}.bind`);
    parts.bindings.push({
      source: naming.exchange(binding.exchange),
      destination: name,
      destinationType: 'queue',
      pattern: binding.pattern ?? defaultPattern(exchangeDecls[binding.exchange]!),
      ...(binding.arguments ? { arguments: binding.arguments } : {}),
    });
  }
  parts.bindings.push({
    source: delay.deliveryExchange,
    destination: name,
    destinationType: 'queue',
    pattern: delayDeliveryPattern(delay, name),
  });
}

/** What the coordination queues are planned from (see PlanInput). */
export interface CoordinationInput {
  readonly leaderElection?: boolean;
  readonly limiters?: readonly { readonly key: string; readonly maxPermits: number }[];
}

/**
 * Broker-backed coordination: the cron leader token queue and ledger, and per rate limiter its permit queue
 * and the token queue electing its refiller.
 */
export function planCoordinationQueues(
  parts: PlanParts,
  input: CoordinationInput,
  naming: TopologyNaming,
  options: ResolvedTopologyOptions,
): void {
  if (input.leaderElection) {
    parts.queues.push({
      name: naming.leaderQueue(),
      role: 'leader',
      type: 'quorum',
      assertion: leaderQueueAssertion(options.queueExpiresMs),
    });
    parts.queues.push({
      name: naming.cronLedgerQueue(),
      role: 'ledger',
      type: 'quorum',
      assertion: ledgerQueueAssertion(options.queueExpiresMs),
    });
  }
  for (const limiter of input.limiters ?? []) {
    if (!KEY_PATTERN.test(limiter.key))
      throw new TopologyError(
        `rate limiter key '${limiter.key}' may contain only letters, digits and . _ : -`,
      );
    parts.queues.push({
      name: naming.permitQueue(limiter.key),
      role: 'permit',
      type: 'classic',
      assertion: permitQueueAssertion(limiter.maxPermits, options.queueExpiresMs),
    });
    parts.queues.push({
      name: naming.limiterLeaderQueue(limiter.key),
      role: 'leader',
      type: 'quorum',
      assertion: leaderQueueAssertion(options.queueExpiresMs),
    });
  }
}
