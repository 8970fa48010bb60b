import { TopologyError } from '../core';

/**
 * Topology as code: exchanges, queues and bindings as plain, typed data. `defineTopology` only
 * freezes and types the declaration; `planTopology` checks it and derives every broker entity.
 */

export type ExchangeType = 'direct' | 'topic' | 'fanout' | 'headers';
export type QueueType = 'quorum' | 'classic';
export type QueueOverflow = 'drop-head' | 'reject-publish' | 'reject-publish-dlx';

export interface ExchangeDeclaration {
  readonly type: ExchangeType;
  /** Default true. */
  readonly durable?: boolean;
  readonly autoDelete?: boolean;
  /** Only reachable from other exchanges. */
  readonly internal?: boolean;
  /** Key of another declared exchange that receives what this one cannot route. */
  readonly alternateExchange?: string;
  readonly arguments?: Readonly<Record<string, unknown>>;
}

export interface BindingDeclaration {
  /** Key of a declared exchange. */
  readonly exchange: string;
  /** Routing key or topic pattern; default '#' for topic, '' otherwise. */
  readonly pattern?: string;
  /** Match arguments for headers exchanges. */
  readonly arguments?: Readonly<Record<string, unknown>>;
}

export interface QueueDeclaration {
  /**
   * Default 'quorum', or 'classic' when `maxPriority` is set. `type: 'quorum'` with `maxPriority` opts into
   * quorum-queue priorities (RabbitMQ 4.0+; refused on an older broker).
   */
  readonly type?: QueueType;
  /**
   * 1..10 (RabbitMQ allows 255, but each classic level costs throughput: 255 is 10-30x slower). The range of
   * `priority` on publish. A quorum queue (RabbitMQ 4.0+) orders priorities the broker's way, see docs/guide/priorities.md.
   */
  readonly maxPriority?: number;
  /** Messages older than this expire (and are dead-lettered with reason `expired`). */
  readonly messageTtlMs?: number;
  readonly maxLength?: number;
  readonly overflow?: QueueOverflow;
  /** Only one consumer at a time receives messages; the broker fails over to the next. */
  readonly singleActiveConsumer?: boolean;
  /**
   * Quorum only: deliveries of one message before the broker dead-letters it (reason `delivery_limit`),
   * the backstop against jobs that crash the worker process. Default 10.
   */
  readonly deliveryLimit?: number;
  /**
   * Quorum only, used on RabbitMQ 4.3 and later: a retry of this queue's jobs whose delay is exactly this
   * many ms stays in the queue (the worker rejects the delivery and the broker redelivers it after the
   * delay: `x-delayed-retry-*`), instead of a republish through the delay levels. On an older broker the
   * arguments are declared but unused and retries are republished as always. Each in-place retry counts
   * towards `deliveryLimit`, and so does a worker crash mid-job (which then spends an attempt too):
   * docs/guide/retries.md#in-place-retries.
   */
  readonly inPlaceRetryMs?: number;
  /**
   * @deprecated Every queue is durable: RabbitMQ 4.3 refuses transient non-exclusive queues. `false` is a
   * TopologyError.
   */
  readonly durable?: true;
  readonly bind?: BindingDeclaration | readonly BindingDeclaration[];
  /**
   * Fair share across job keys (docs/guide/fair-share.md): jobs with a key are hashed into `lanes` queues
   * of their own beside this one, and the worker takes from every lane and runs the keys by deficit
   * round-robin, so one key's flood never starves the others. `true` is `{}` (8 lanes, every key weight
   * 1). Not with `maxPriority` or `singleActiveConsumer`. Default: off (one FIFO queue).
   */
  readonly fairness?: true | FairnessDeclaration;
  /**
   * Ordered partitions (docs/guide/ordered-partitions.md): the queue's jobs, each with a key, are hashed into
   * this many partition queues (1 to 64), each consumed by one worker process at a time, assigned and
   * rebalanced by warren; the jobs of one key run one at a time, in publish order. A job without a key is a
   * PublishError. Not with `fairness`, `maxPriority` or `singleActiveConsumer`. Default: off.
   */
  readonly partitions?: number | PartitionsDeclaration;
  /** Raw x-arguments for what the typed fields do not cover. Contradicting a typed field is an error. */
  readonly arguments?: Readonly<Record<string, unknown>>;
}

/** How a queue shares its workers across job keys (`QueueDeclaration.fairness`). */
export interface FairnessDeclaration {
  /**
   * Lane queues the keys are hashed into: 2 to 64. More lanes, fewer keys sharing one lane's FIFO order
   * (docs/guide/fair-share.md#guarantees). Default 8. Changing it is a migration: set `previousLanes`.
   */
  readonly lanes?: number;
  /**
   * While the lane count changes: the count before. Its lanes stay planned and consumed until they are
   * empty (`warren queues` shows their depth), so nothing is re-hashed in place and nothing is lost.
   */
  readonly previousLanes?: number;
  /** Share of a key relative to the others (default 1 each): a key of weight 3 runs 3 jobs per round. */
  readonly weights?: Readonly<Record<string, number>>;
}

/** A queue's ordered partitions while their count changes (`QueueDeclaration.partitions`). */
export interface PartitionsDeclaration {
  /** Partition queues the keys are hashed into: 1 to 64. Publishers send here. */
  readonly count: number;
  /**
   * The first step of a migration: the partition count before (its partitions are drained, in order, and the
   * current ones left alone until the next deploy removes `previous`), or `'unpartitioned'` (the queue itself
   * is consumed as before the partitions). docs/guide/ordered-partitions.md#migrations.
   */
  readonly previous?: number | 'unpartitioned';
  /**
   * `'per-key'` (default): the jobs of a key run one at a time, in publish order, retried in place.
   * `'none'`: one owner per partition still, but a key's jobs run side by side (up to the job's
   * `perKeyConcurrency`) and retry through the delay levels: the shape per-key limits need
   * (docs/guide/per-key-limits.md).
   */
  readonly order?: 'per-key' | 'none';
}

export interface TopologyDeclaration {
  readonly exchanges?: Readonly<Record<string, ExchangeDeclaration>>;
  readonly queues?: Readonly<Record<string, QueueDeclaration>>;
  /** Exchange-to-exchange bindings: `{ from: 'jobs', to: 'audit', pattern: '#' }`. */
  readonly exchangeBindings?: readonly {
    readonly from: string;
    readonly to: string;
    readonly pattern?: string;
    readonly arguments?: Readonly<Record<string, unknown>>;
  }[];
}

/**
 * Declares a topology. Queue and exchange keys are logical names: warren prefixes them with the
 * instance's namespace and derives dead-letter and delay entities from them.
 *
 * @example
 * export const topology = defineTopology({
 *   exchanges: { jobs: { type: 'topic' } },
 *   queues: {
 *     email: { bind: { exchange: 'jobs', pattern: 'email.*' } },
 *     reports: { type: 'classic', maxPriority: 5 },
 *   },
 * });
 */
export function defineTopology<const T extends TopologyDeclaration>(declaration: T): T {
  return deepFreeze(declaration);
}

/** Merges topologies contributed by several modules; the same key declared twice must be identical. */
export function mergeTopologies(...declarations: readonly TopologyDeclaration[]): TopologyDeclaration {
  const exchanges: Record<string, ExchangeDeclaration> = {};
  const queues: Record<string, QueueDeclaration> = {};
  const exchangeBindings: NonNullable<TopologyDeclaration['exchangeBindings']>[number][] = [];
  for (const declaration of declarations) {
    mergeEntries('exchange', exchanges, declaration.exchanges);
    mergeEntries('queue', queues, declaration.queues);
    exchangeBindings.push(...(declaration.exchangeBindings ?? []));
  }
  return deepFreeze({ exchanges, queues, exchangeBindings });
}

function mergeEntries<T>(
  kind: string,
  into: Record<string, T>,
  from: Readonly<Record<string, T>> | undefined,
): void {
  for (const [key, value] of Object.entries(from ?? {})) {
    const existing = into[key];
    if (existing !== undefined && JSON.stringify(existing) !== JSON.stringify(value)) {
      throw new TopologyError(
        `${kind} '${key}' is declared twice with different settings: ${JSON.stringify(existing)} and ${JSON.stringify(value)}`,
      );
    }
    into[key] = value;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value as object)) deepFreeze(inner);
  }
  return value;
}
