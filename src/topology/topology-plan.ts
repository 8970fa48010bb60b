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

export type QueueRole = 'job' | 'dead' | 'delay' | 'leader' | 'permit';

export interface PlannedQueue {
  readonly name: string;
  readonly role: QueueRole;
  readonly type: QueueType;
  readonly assertion: QueueAssertion;
  /** For job queues: the declared key, its parking queue and dead-letter exchange. */
  readonly key?: string;
  readonly deadQueue?: string;
  readonly deadExchange?: string;
  readonly maxPriority?: number;
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
