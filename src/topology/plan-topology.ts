import { TopologyError, type JobDefinition } from '../core';
import type {
  BindingDeclaration,
  ExchangeDeclaration,
  QueueDeclaration,
  QueueType,
  TopologyDeclaration,
} from './define-topology';
import { delayDeliveryPattern, delayLevelPattern, planDelayLevels } from './delay-levels';
import { createNaming, type TopologyNaming } from './naming';
import type { ResolvedTopologyOptions } from './options';
import {
  delayLevelAssertion,
  exchangeArguments,
  jobQueueAssertion,
  leaderQueueAssertion,
  ledgerQueueAssertion,
  plainQueueAssertion,
  permitQueueAssertion,
} from './queue-arguments';
import { topicMatches } from './topic-match';
import type {
  PlannedBinding,
  PlannedExchange,
  PlannedJob,
  PlannedQueue,
  TopologyPlan,
} from './topology-plan';

export interface PlanInput {
  readonly topology: TopologyDeclaration;
  readonly jobs: readonly JobDefinition[];
  readonly options: ResolvedTopologyOptions;
  /** Declare the cron leader-election token queue and the cron ledger. */
  readonly leaderElection?: boolean;
  /**
   * Rate limiters: permit queue per key, holding at most `maxPermits`, and the token queue electing its
   * refiller.
   */
  readonly limiters?: readonly { readonly key: string; readonly maxPermits: number }[];
}

const KEY_PATTERN = /^[A-Za-z0-9_.:-]+$/;

/**
 * Turns declarations and job definitions into a validated, immutable plan. Pure: no broker involved,
 * so every contradiction is reported before anything connects.
 */
export function planTopology(input: PlanInput): TopologyPlan {
  const { topology, options } = input;
  const naming = createNaming(options.namespace);
  const exchangeDecls = topology.exchanges ?? {};
  const queueDecls = topology.queues ?? {};
  const exchanges: PlannedExchange[] = [];
  const queues: PlannedQueue[] = [];
  const bindings: PlannedBinding[] = [];

  for (const [key, decl] of Object.entries(exchangeDecls))
    exchanges.push(planExchange(key, decl, exchangeDecls, naming));
  for (const binding of topology.exchangeBindings ?? []) {
    for (const end of [binding.from, binding.to])
      requireExchange(end, exchangeDecls, `exchangeBindings (${binding.from} -> ${binding.to})`);
    bindings.push({
      source: naming.exchange(binding.from),
      destination: naming.exchange(binding.to),
      destinationType: 'exchange',
      pattern: binding.pattern ?? defaultPattern(exchangeDecls[binding.from]!),
      ...(binding.arguments ? { arguments: binding.arguments } : {}),
    });
  }

  const delay = planDelayLevels(naming, options.delay.unitMs, options.delay.levels, options.delay.queueType);
  for (const level of delay.levels) {
    exchanges.push(internalTopicExchange(level.name));
  }
  exchanges.push(internalTopicExchange(delay.deliveryExchange));
  for (const level of delay.levels) {
    const next = level.level === 0 ? delay.deliveryExchange : delay.levels[level.level - 1]!.name;
    queues.push({
      name: level.name,
      role: 'delay',
      type: delay.queueType,
      assertion: delayLevelAssertion(delay.queueType, level.ttlMs, next, options.queueExpiresMs),
    });
    bindings.push({
      source: level.name,
      destination: level.name,
      destinationType: 'queue',
      pattern: delayLevelPattern(delay, level.level, 1),
    });
    bindings.push({
      source: level.name,
      destination: next,
      destinationType: 'exchange',
      pattern: delayLevelPattern(delay, level.level, 0),
    });
  }

  for (const [key, decl] of Object.entries(queueDecls)) {
    const path = `topology.queues.${key}`;
    if (!KEY_PATTERN.test(key))
      throw new TopologyError(`${path}: a queue key may contain only letters, digits and . _ : -`, {
        queue: key,
      });
    const type = queueType(decl, path);
    const deadExchange = naming.deadExchange(key);
    const deadQueue = naming.deadQueue(key);
    exchanges.push({
      name: deadExchange,
      type: 'fanout',
      durable: true,
      autoDelete: false,
      internal: false,
      arguments: {},
    });
    queues.push({
      name: deadQueue,
      role: 'dead',
      type,
      assertion: plainQueueAssertion(type, {}, options.queueExpiresMs),
    });
    bindings.push({ source: deadExchange, destination: deadQueue, destinationType: 'queue', pattern: '' });
    const name = naming.queue(key);
    queues.push({
      name,
      key,
      role: 'job',
      type,
      deadQueue,
      deadExchange,
      ...(decl.maxPriority !== undefined ? { maxPriority: decl.maxPriority } : {}),
      assertion: jobQueueAssertion({
        declaration: decl,
        type,
        deadLetterExchange: deadExchange,
        defaultDeliveryLimit: options.deliveryLimit,
        expiresMs: options.queueExpiresMs,
        path,
      }),
    });
    for (const binding of bindingsOf(decl)) {
      requireExchange(binding.exchange, exchangeDecls, `${path}.bind`);
      bindings.push({
        source: naming.exchange(binding.exchange),
        destination: name,
        destinationType: 'queue',
        pattern: binding.pattern ?? defaultPattern(exchangeDecls[binding.exchange]!),
        ...(binding.arguments ? { arguments: binding.arguments } : {}),
      });
    }
    bindings.push({
      source: delay.deliveryExchange,
      destination: name,
      destinationType: 'queue',
      pattern: delayDeliveryPattern(delay, name),
    });
  }

  if (input.leaderElection) {
    queues.push({
      name: naming.leaderQueue(),
      role: 'leader',
      type: 'quorum',
      assertion: leaderQueueAssertion(options.queueExpiresMs),
    });
    queues.push({
      name: naming.cronLedgerQueue(),
      role: 'leader',
      type: 'quorum',
      assertion: ledgerQueueAssertion(options.queueExpiresMs),
    });
  }
  for (const limiter of input.limiters ?? []) {
    if (!KEY_PATTERN.test(limiter.key))
      throw new TopologyError(
        `rate limiter key '${limiter.key}' may contain only letters, digits and . _ : -`,
      );
    queues.push({
      name: naming.permitQueue(limiter.key),
      role: 'permit',
      type: 'classic',
      assertion: permitQueueAssertion(limiter.maxPermits, options.queueExpiresMs),
    });
    queues.push({
      name: naming.limiterLeaderQueue(limiter.key),
      role: 'leader',
      type: 'quorum',
      assertion: leaderQueueAssertion(options.queueExpiresMs),
    });
  }

  // Operator requests (warren/ops) fan out to every process; each binds an exclusive queue of its own.
  exchanges.push({
    name: naming.controlExchange(),
    type: 'fanout',
    durable: true,
    autoDelete: false,
    internal: false,
    arguments: {},
  });
  const jobs = planJobs(input.jobs, queueDecls, exchangeDecls, naming);
  for (const queue of queues) requireDurable(queue);
  return deepFreeze({ naming, exchanges, queues, bindings, jobs, delay });
}

function planExchange(
  key: string,
  decl: ExchangeDeclaration,
  all: Readonly<Record<string, ExchangeDeclaration>>,
  naming: TopologyNaming,
): PlannedExchange {
  const path = `topology.exchanges.${key}`;
  if (!KEY_PATTERN.test(key) || key.startsWith('amq.'))
    throw new TopologyError(
      `${path}: an exchange key may contain only letters, digits and . _ : - and may not start with amq.`,
    );
  if (!['direct', 'topic', 'fanout', 'headers'].includes(decl.type))
    throw new TopologyError(
      `${path}.type must be one of 'direct', 'topic', 'fanout', 'headers' (got ${JSON.stringify(decl.type)})`,
    );
  if (decl.alternateExchange !== undefined)
    requireExchange(decl.alternateExchange, all, `${path}.alternateExchange`);
  const alternate =
    decl.alternateExchange === undefined ? undefined : naming.exchange(decl.alternateExchange);
  return {
    name: naming.exchange(key),
    type: decl.type,
    durable: decl.durable ?? true,
    autoDelete: decl.autoDelete ?? false,
    internal: decl.internal ?? false,
    arguments: exchangeArguments(alternate, decl.arguments, path),
  };
}

function internalTopicExchange(name: string): PlannedExchange {
  return { name, type: 'topic', durable: true, autoDelete: false, internal: false, arguments: {} };
}

function queueType(decl: QueueDeclaration, path: string): QueueType {
  if (decl.type !== undefined && decl.type !== 'quorum' && decl.type !== 'classic') {
    throw new TopologyError(`${path}.type must be 'quorum' or 'classic' (got ${JSON.stringify(decl.type)})`);
  }
  if (decl.maxPriority !== undefined) {
    if (!Number.isInteger(decl.maxPriority) || decl.maxPriority < 1 || decl.maxPriority > 255) {
      throw new TopologyError(
        `${path}.maxPriority must be an integer from 1 to 255, and should stay <= 10 (got ${decl.maxPriority})`,
      );
    }
    // Quorum priorities (RabbitMQ 4.0+) are opted into by writing type 'quorum' beside maxPriority; a queue
    // with maxPriority alone stays classic, so an upgrade never changes a queue's type.
  }
  const type = decl.type ?? (decl.maxPriority !== undefined ? 'classic' : 'quorum');
  if ((decl as { durable?: unknown }).durable === false)
    throw new TopologyError(
      `${path}.durable must be true (got false): RabbitMQ 4.3 refuses transient non-exclusive queues`,
    );
  if (type === 'classic' && decl.deliveryLimit !== undefined) {
    throw new TopologyError(
      `${path}.deliveryLimit applies to quorum queues only (classic queues: warren counts redeliveries itself)`,
    );
  }
  for (const [field, value] of [
    ['messageTtlMs', decl.messageTtlMs],
    ['maxLength', decl.maxLength],
    ['deliveryLimit', decl.deliveryLimit],
  ] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value < 0))
      throw new TopologyError(`${path}.${field} must be an integer >= 0 (got ${value})`);
  }
  return type;
}

/**
 * The invariant behind every plan: no transient non-exclusive queue (RabbitMQ 4.3 refuses them by default).
 * The assertion builders only make durable ones; this catches a raw argument or a future builder that would
 * not.
 */
function requireDurable(queue: PlannedQueue): void {
  const { durable, exclusive } = queue.assertion as { durable: boolean; exclusive: boolean };
  if (!durable && !exclusive)
    throw new TopologyError(
      `queue '${queue.name}' would be transient and non-exclusive, which RabbitMQ 4.3 refuses`,
      { queue: queue.name },
    );
}

function bindingsOf(decl: QueueDeclaration): readonly BindingDeclaration[] {
  if (decl.bind === undefined) return [];
  return Array.isArray(decl.bind)
    ? (decl.bind as readonly BindingDeclaration[])
    : [decl.bind as BindingDeclaration];
}

function requireExchange(
  key: string,
  all: Readonly<Record<string, ExchangeDeclaration>>,
  path: string,
): void {
  if (all[key] === undefined) {
    const known = Object.keys(all);
    throw new TopologyError(
      `${path}: unknown exchange '${key}'${known.length ? ` (declared: ${known.join(', ')})` : ' (no exchanges are declared)'}`,
    );
  }
}

function defaultPattern(decl: ExchangeDeclaration): string {
  return decl.type === 'topic' ? '#' : '';
}

function planJobs(
  definitions: readonly JobDefinition[],
  queueDecls: Readonly<Record<string, QueueDeclaration>>,
  exchangeDecls: Readonly<Record<string, ExchangeDeclaration>>,
  naming: TopologyNaming,
): Map<string, PlannedJob> {
  const jobs = new Map<string, PlannedJob>();
  const seen = new Map<string, JobDefinition>();
  for (const job of definitions) {
    const path = `job '${job.name}'`;
    const earlier = seen.get(job.name);
    if (earlier !== undefined) {
      if (earlier === job || sameDefinition(earlier, job)) continue;
      throw new TopologyError(
        `${path} is defined twice with different settings (queues '${earlier.queue}' and '${job.queue}')`,
        { jobName: job.name },
      );
    }
    seen.set(job.name, job);
    const queue = queueDecls[job.queue];
    if (queue === undefined) {
      const known = Object.keys(queueDecls);
      throw new TopologyError(
        `${path} uses unknown queue '${job.queue}'${known.length ? ` (declared: ${known.join(', ')})` : ' (no queues are declared)'}`,
        { jobName: job.name, queue: job.queue },
      );
    }
    if (job.priority !== undefined) {
      if (queue.maxPriority === undefined)
        throw new TopologyError(
          `${path} has priority ${job.priority} but queue '${job.queue}' has no maxPriority`,
          { jobName: job.name },
        );
      if (!Number.isInteger(job.priority) || job.priority < 0 || job.priority > queue.maxPriority) {
        throw new TopologyError(
          `${path}: priority must be an integer from 0 to ${queue.maxPriority} (got ${job.priority})`,
          { jobName: job.name },
        );
      }
    }
    const queueName = naming.queue(job.queue);
    jobs.set(job.name, {
      ...job,
      queueName,
      ...(queue.maxPriority !== undefined ? { queueMaxPriority: queue.maxPriority } : {}),
      route: routeOf(job.name, queue, exchangeDecls, naming, queueName),
    });
  }
  return jobs;
}

/**
 * A job published by name travels through the first exchange that routes its name to its queue, else straight
 * to the queue.
 */
function routeOf(
  jobName: string,
  queue: QueueDeclaration,
  exchangeDecls: Readonly<Record<string, ExchangeDeclaration>>,
  naming: TopologyNaming,
  queueName: string,
): PlannedJob['route'] {
  for (const binding of bindingsOf(queue)) {
    const exchange = exchangeDecls[binding.exchange]!;
    const pattern = binding.pattern ?? defaultPattern(exchange);
    const routes =
      exchange.type === 'fanout' ||
      (exchange.type === 'direct' && pattern === jobName) ||
      (exchange.type === 'topic' && topicMatches(pattern, jobName));
    if (routes) return { exchange: naming.exchange(binding.exchange), routingKey: jobName };
  }
  return { exchange: '', routingKey: queueName };
}

function sameDefinition(a: JobDefinition, b: JobDefinition): boolean {
  return (
    a.queue === b.queue &&
    a.attempts === b.attempts &&
    a.timeoutMs === b.timeoutMs &&
    a.concurrency === b.concurrency &&
    a.priority === b.priority &&
    JSON.stringify(a.backoff) === JSON.stringify(b.backoff)
  );
}

function deepFreeze<T>(value: T): T {
  if (value instanceof Map) {
    for (const inner of value.values()) deepFreeze(inner);
    return Object.freeze(value);
  }
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    // A job's schema belongs to a validation library that may cache inside it: leave it alone.
    for (const [key, inner] of Object.entries(value as object)) if (key !== 'schema') deepFreeze(inner);
  }
  return value;
}
