import { TopologyError, type JobDefinition } from '../core';
import type { ExchangeType, QueueType } from './define-topology';
import type { DelayPlan } from './delay-levels';
import type { TopologyNaming } from './naming';
import type { QueueAssertion, StreamRetention } from './queue-arguments';

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
  /** A retry of exactly this delay stays in the queue (RabbitMQ 4.3+), see QueueDeclaration. */
  readonly inPlaceRetryMs?: number;
  /** Quorum: deliveries of one message before the broker dead-letters it. */
  readonly deliveryLimit?: number;
  /** On the queue itself (the intake) of a queue with fairness: its lanes and weights. */
  readonly fairness?: PlannedFairness;
  /** On the queue itself of a queue with ordered partitions: its partitions and membership exchange. */
  readonly partitions?: PlannedPartitions;
  /**
   * On a lane of a queue with fairness: which lane of which set. A lane shares the queue's key, parking
   * queue and dead-letter exchange; a job delivered from it belongs to the queue.
   */
  readonly lane?: PlannedLane;
}

/** The lanes of a queue with fairness, as planned (docs/guide/fair-share.md). */
export interface PlannedFairness {
  /** Full names of the current lanes, by lane index: a key's lane is `laneOf(key, lanes.length)`. */
  readonly lanes: readonly string[];
  /** Full names of the lanes of the previous count, consumed until empty while the count changes. */
  readonly previousLanes: readonly string[];
  /** Weight per key (default 1). */
  readonly weights: Readonly<Record<string, number>>;
}

/** The ordered partitions of a queue, as planned (docs/guide/ordered-partitions.md). */
export interface PlannedPartitions {
  /** Full names of the current partitions, by index: a key's partition is `laneOf(key, current.length)`. */
  readonly current: readonly string[];
  /** Full names of the partitions of the previous count, drained before the current ones are consumed. */
  readonly previous: readonly string[];
  /** The migration's first step from an unpartitioned queue: the queue itself is consumed, not the partitions. */
  readonly drainsQueue: boolean;
  /** The fanout exchange of the queue's membership heartbeats. */
  readonly membersExchange: string;
  /** `order: 'per-key'` (default): a key's jobs one at a time, in order; false for `order: 'none'`. */
  readonly ordered: boolean;
}

/** Where a lane queue stands among its queue's lanes. */
export interface PlannedLane {
  /** Full name of the queue (the intake) it is a lane of. */
  readonly of: string;
  readonly index: number;
  readonly count: number;
  /** A lane of the previous count: nothing new is published to it; it is consumed until empty. */
  readonly draining: boolean;
  /** A partition (single active consumer, one owner at a time) rather than a fair-share lane. */
  readonly partition?: true;
  /** A partition whose keys run one job at a time, in order (`order: 'per-key'`, the default). */
  readonly ordered?: true;
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

/**
 * What each of warren's own streams holds: `job-control` (cancel, promote, reschedule records),
 * `schedules` (the run-time schedule registry), `dead-letter-log` (every dead letter of the namespace, with
 * replay and purge markers), `history` (job lifecycle events, planned only when the history is on), `aggregates` and its roll-ups
 * `aggregates-hours` and `aggregates-days` (queue aggregates for the dashboard's graphs, planned only when
 * they are on), `marks` (deploys, pauses and resumes on the graphs' time axis, planned with the
 * aggregates), and the
 * checkpoints of the job-control stream and of the registry (`*-checkpoints`).
 */
export type StreamKind =
  | 'job-control'
  | 'schedules'
  | 'dead-letter-log'
  | 'history'
  | 'aggregates'
  | 'aggregates-hours'
  | 'aggregates-days'
  | 'marks'
  /** Per-key limit overrides (docs/guide/per-key-limits.md), planned when a job has per-key limits. */
  | 'limits'
  | 'job-control-checkpoints'
  | 'schedules-checkpoints';

/**
 * One of warren's own streams (RabbitMQ 3.9+): read by offset without consuming, so it can be read again
 * and again. Planned like every other queue: declared with the plan, compared by `topology diff`, deleted by
 * `deleteTopology`. Always durable, never with `x-expires` (a stream takes none).
 */
export interface PlannedStream {
  readonly role: 'stream';
  readonly stream: StreamKind;
  readonly name: string;
  readonly type: 'stream';
  /** Age and size limits, each enforced a segment at a time; undefined: kept until deleted. */
  readonly retention: StreamRetention | undefined;
  readonly assertion: QueueAssertion;
}

/**
 * A queue of the plan, told apart by `role`: only a job queue has a key, a parking queue and a priority;
 * only a stream has a retention.
 */
export type PlannedQueue =
  | PlannedJobQueue
  | PlannedDeadQueue
  | PlannedDelayQueue
  | PlannedLeaderQueue
  | PlannedLedgerQueue
  | PlannedPermitQueue
  | PlannedStream;

/** Whether a planned queue is a job queue (narrows it to {@link PlannedJobQueue}). */
export function isJobQueue(queue: PlannedQueue): queue is PlannedJobQueue {
  return queue.role === 'job';
}

/**
 * Whether a planned queue is a job queue as declared in `topology.queues`, not one of its lanes: what lists
 * and counts one row per queue (its dead letters, metrics, `warren queues`) iterate.
 */
export function isDeclaredJobQueue(queue: PlannedQueue): queue is PlannedJobQueue {
  return queue.role === 'job' && queue.lane === undefined;
}

/** Whether a planned queue is a stream (narrows it to {@link PlannedStream}). */
export function isStream(queue: PlannedQueue): queue is PlannedStream {
  return queue.role === 'stream';
}

/** The planned stream of a kind, or undefined when the plan has none (the history while it is off). */
export function plannedStream(plan: TopologyPlan, kind: StreamKind): PlannedStream | undefined {
  return plan.queues.find((q): q is PlannedStream => isStream(q) && q.stream === kind);
}

/** The planned stream of a kind; a plan without it (made without `streams`) is a TopologyError. */
export function requireStream(plan: TopologyPlan, kind: StreamKind): PlannedStream {
  const stream = plannedStream(plan, kind);
  if (stream === undefined)
    throw new TopologyError(`the topology plan has no ${kind} stream (plan it with streams['${kind}'])`);
  return stream;
}

export interface PlannedBinding {
  readonly source: string;
  readonly destination: string;
  readonly destinationType: 'queue' | 'exchange';
  readonly pattern: string;
  readonly arguments?: Readonly<Record<string, unknown>>;
}

/** A job's per-key limits, as planned (docs/guide/per-key-limits.md): counted by the owner of the key's partition. */
export interface PlannedKeyLimits {
  /** At most this many of the job's runs at once per key. */
  readonly concurrency?: number;
  /** At most `max` starts per key in any `durationMs`; jobs naming the same `scope` (`limiter.key`) share it. */
  readonly rate?: { readonly scope: string; readonly max: number; readonly durationMs: number };
}

export interface PlannedJob extends JobDefinition {
  /** Full name of the queue it is consumed from. */
  readonly queueName: string;
  /** Its per-key limits (`perKeyConcurrency`, `limiter.per`), if any. */
  readonly keyLimits?: PlannedKeyLimits;
  /** The queue's maxPriority, if it has one: the range of `priority` on publish. */
  readonly queueMaxPriority?: number;
  /** A plain publish goes here: the exchange that routes the job name to its queue, or the queue itself. */
  readonly route: { readonly exchange: string; readonly routingKey: string };
  /** The queue's current lanes (full names, by index) when it has fairness: a keyed publish goes to one. */
  readonly lanes?: readonly string[];
  /** The queue has ordered partitions (`lanes` are its partitions): a publish without a key is refused. */
  readonly partitioned?: true;
}
