import type { JobDefinition } from '../core';
import type { ExchangeType, QueueType } from './define-topology';
import type { DelayPlan } from './delay-levels';
import type { TopologyNaming } from './naming';
import type { QueueAssertion } from './queue-arguments';

/**
 * The plan: every entity warren declares, in declaration order, with every derived name. Plain, immutable
 * data.
 */
export interface TopologyPlan {
  readonly naming: TopologyNaming;
  readonly exchanges: readonly PlannedExchange[];
  readonly queues: readonly PlannedQueue[];
  readonly bindings: readonly PlannedBinding[];
  /** Job name → where it is consumed and how a publish reaches it. */
  readonly jobs: ReadonlyMap<string, PlannedJob>;
  readonly delay: DelayPlan;
}

export interface PlannedExchange {
  readonly name: string;
  readonly type: ExchangeType;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly internal: boolean;
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** What a planned queue is for; each role is one member of {@link PlannedQueue}. */
export type QueueRole = PlannedQueue['role'];

/** What every planned queue has: its full name, type and the exact arguments it is declared with. */
interface PlannedQueueBase {
  readonly name: string;
  readonly type: QueueType;
  readonly assertion: QueueAssertion;
}

/** A declared queue jobs are consumed from, with the parking queue its dead letters go to. */
export interface PlannedJobQueue extends PlannedQueueBase {
  readonly role: 'job';
  /** The key it is declared under in `topology.queues`. */
  readonly key: string;
  /** Full name of its parking queue. */
  readonly deadQueue: string;
  /** Full name of the fanout exchange it dead-letters to, bound to `deadQueue`. */
  readonly deadExchange: string;
  readonly maxPriority?: number;
}

/** The parking queue of a job queue: dead letters wait here. */
export interface PlannedDeadQueue extends PlannedQueueBase {
  readonly role: 'dead';
}

/** One delay level: messages wait out its TTL, then move one level down. */
export interface PlannedDelayQueue extends PlannedQueueBase {
  readonly role: 'delay';
}

/** A single-active-consumer token queue electing a leader (cron, a rate limiter's refiller). */
export interface PlannedLeaderQueue extends PlannedQueueBase {
  readonly role: 'leader';
}

/** The cron ledger: one record of when each schedule last fired. */
export interface PlannedLedgerQueue extends PlannedQueueBase {
  readonly role: 'ledger';
}

/** A rate limiter's permits, at most `maxPermits` messages. */
export interface PlannedPermitQueue extends PlannedQueueBase {
  readonly role: 'permit';
}

/** A queue of the plan, told apart by `role`: only a job queue has a key, a parking queue and a priority. */
export type PlannedQueue =
  | PlannedJobQueue
  | PlannedDeadQueue
  | PlannedDelayQueue
  | PlannedLeaderQueue
  | PlannedLedgerQueue
  | PlannedPermitQueue;

/** Whether a planned queue is a job queue (narrows it to {@link PlannedJobQueue}). */
export function isJobQueue(queue: PlannedQueue): queue is PlannedJobQueue {
  return queue.role === 'job';
}

export interface PlannedBinding {
  readonly source: string;
  readonly destination: string;
  readonly destinationType: 'queue' | 'exchange';
  readonly pattern: string;
  readonly arguments?: Readonly<Record<string, unknown>>;
}

export interface PlannedJob extends JobDefinition {
  /** Full name of the queue it is consumed from. */
  readonly queueName: string;
  /** The queue's maxPriority, if it has one: the range of `priority` on publish. */
  readonly queueMaxPriority?: number;
  /** A plain publish goes here: the exchange that routes the job name to its queue, or the queue itself. */
  readonly route: { readonly exchange: string; readonly routingKey: string };
}
