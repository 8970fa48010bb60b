import { TopologyError, type JobDefinition } from '../core';
import type { ExchangeDeclaration, TopologyDeclaration } from './define-topology';
import { planDelayLevels } from './delay-levels';
import { createNaming, type TopologyNaming } from './naming';
import type { ResolvedTopologyOptions } from './options';
import {
  checkDeclarationKeys,
  defaultPattern,
  KEY_PATTERN,
  queueType,
  requireDurable,
  requireExchange,
} from './plan-checks';
import { planJobs } from './plan-jobs';
import {
  fanoutExchange,
  headersExchange,
  planCoordinationQueues,
  planDelayQueues,
  planJobQueue,
  type CoordinationInput,
  type PlanParts,
} from './plan-queues';
import { planStreams, type PlanStreams } from './plan-streams';
import { exchangeArguments } from './queue-arguments';
import type { PlannedExchange, TopologyPlan } from './topology-plan';

export interface PlanInput extends CoordinationInput {
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
  /**
   * warren's own streams (RabbitMQ 3.9+) to plan, by kind, each with its retention (`{}`: none, kept until
   * deleted). createWarren and warren/ops plan job-control, schedules and dead-letter-log always, history
   * when it is on.
   */
  readonly streams?: PlanStreams;
  /**
   * Delays (ms) to a job queue (its key in `topology.queues`) that get a hold of their own (one queue, one
   * hop) besides the levels: createWarren and warren/ops pass the fixed backoffs of the jobs they plan.
   */
  readonly holds?: readonly { readonly queue: string; readonly delayMs: number }[];
}

/**
 * Turns declarations and job definitions into a validated, immutable plan. Pure: no broker involved,
 * so every contradiction is reported before anything connects.
 */
export function planTopology(input: PlanInput): TopologyPlan {
  const { topology, options } = input;
  checkDeclarationKeys('topology', topology, ['exchanges', 'queues', 'exchangeBindings']);
  const naming = createNaming(options.namespace);
  const exchangeDecls = topology.exchanges ?? {};
  const queueDecls = topology.queues ?? {};
  const parts: PlanParts = { exchanges: [], queues: [], bindings: [] };

  planDeclaredExchanges(parts, topology, naming);
  const delay = planDelayLevels(
    naming,
    options.delay.unitMs,
    options.delay.levels,
    options.delay.queueType,
    (input.holds ?? [])
      .filter((hold) => Object.hasOwn(queueDecls, hold.queue))
      .map((hold) => ({
        queueName: naming.queue(hold.queue),
        type: queueType(queueDecls[hold.queue]!, `topology.queues.${hold.queue}`),
        delayMs: hold.delayMs,
      })),
  );
  planDelayQueues(parts, delay, options);
  for (const [key, decl] of Object.entries(queueDecls))
    planJobQueue(parts, key, decl, { naming, options, delay, exchangeDecls });
  planCoordinationQueues(parts, input, naming, options);
  planStreams(parts, input.streams ?? {}, naming);
  // Operator requests (warren/ops) fan out to every process; each binds an exclusive queue of its own.
  parts.exchanges.push(fanoutExchange(naming.controlExchange()));
  // Live job events to other processes: each subscriber binds an exclusive queue by job id, name or queue.
  parts.exchanges.push(headersExchange(naming.jobEvents()));

  const jobs = planJobs(input.jobs, queueDecls, exchangeDecls, naming);
  for (const queue of parts.queues) requireDurable(queue);
  return deepFreeze({ naming, ...parts, jobs, delay });
}

/** The user's exchanges and the bindings between them. */
function planDeclaredExchanges(
  parts: PlanParts,
  topology: TopologyDeclaration,
  naming: TopologyNaming,
): void {
  const exchangeDecls = topology.exchanges ?? {};
  for (const [key, decl] of Object.entries(exchangeDecls))
    parts.exchanges.push(planExchange(key, decl, exchangeDecls, naming));
  for (const [i, binding] of (topology.exchangeBindings ?? []).entries()) {
    checkDeclarationKeys(`topology.exchangeBindings[${i}]`, binding, ['from', 'to', 'pattern', 'arguments']);
    for (const end of [binding.from, binding.to])
      requireExchange(end, exchangeDecls, `exchangeBindings (${binding.from} -> ${binding.to})`);
    parts.bindings.push({
      source: naming.exchange(binding.from),
      destination: naming.exchange(binding.to),
      destinationType: 'exchange',
      pattern: binding.pattern ?? defaultPattern(exchangeDecls[binding.from]!),
      ...(binding.arguments ? { arguments: binding.arguments } : {}),
    });
  }
}

function planExchange(
  key: string,
  decl: ExchangeDeclaration,
  all: Readonly<Record<string, ExchangeDeclaration>>,
  naming: TopologyNaming,
): PlannedExchange {
  const path = `topology.exchanges.${key}`;
  checkDeclarationKeys(path, decl, [
    'type',
    'durable',
    'autoDelete',
    'internal',
    'alternateExchange',
    'arguments',
  ]);
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
