import type { BreakerOptions } from '../breaker';
import type { ConnectionOptions } from '../connection';
import { checkKnownKeys, type Instrumentation, type JobDefaults, type Logger } from '../core';
import type { JobRef } from '../decorators';
import type { PublisherOptions } from '../publisher';
import type { SchedulerOptions } from '../scheduler';
import {
  resolveTopologyOptions,
  type DelayOptions,
  type ResolvedTopologyOptions,
  type TopologyDeclaration,
} from '../topology';
import type { DedupStore, IdempotencyStore, JoinStore } from '../idempotency';
import type { OutboxOptions } from '../outbox';
import type { WorkerOptions } from '../worker';
import type { SigningKeyOption } from '../records';
import type { HistoryOptions } from '../history';
import type { AggregatesOptions } from '../aggregates';
import type { EventsOptions } from '../job-events';
import type { WarrenDeadLetterLogOptions } from './dead-letter-log';

/**
 * Everything `createWarren` takes. Only `topology` and a handler or job class are needed in practice;
 * every field is on the options reference page (docs/reference/options.md), with its default.
 *
 * @example
 * const warren = await createWarren({ url: process.env.AMQP_URL, topology, handlers: [new WelcomeEmail(mailer)] });
 */
export interface WarrenOptions {
  /** Broker URL or cluster node list; see ConnectionOptions.url for the default. */
  readonly url?: string | readonly string[];
  readonly connection?: Omit<ConnectionOptions, 'url'>;
  /** Prefix of every queue and exchange name. Default ''. */
  readonly namespace?: string;
  readonly topology?: TopologyDeclaration;
  /** Instances of @Job classes, and jobs of `defineJob`, that this process runs. */
  readonly handlers?: readonly object[];
  /** @Job classes and jobs of `defineJob` that this process only publishes (their handlers run elsewhere). */
  readonly jobs?: readonly JobRef[];
  /** A pino logger; default silent. */
  readonly logger?: Logger;
  /** Attempts, backoff, timeout and concurrency for jobs that do not set their own. */
  readonly jobDefaults?: JobDefaults;
  readonly delay?: DelayOptions;
  readonly queues?: {
    /** Default quorum x-delivery-limit (crash-loop backstop). Default 10. */
    readonly deliveryLimit?: number;
    /**
     * @deprecated Every queue is durable: RabbitMQ 4.3 refuses transient non-exclusive queues. `false` is a
     * ConfigurationError.
     */
    readonly durable?: true;
    /** x-expires on every queue: a safety net for throwaway test namespaces. */
    readonly expiresMs?: number;
  };
  readonly publisher?: PublisherOptions;
  /**
   * Cron: whether this process takes part in the leader election, default time zone and missed-tick policy.
   */
  readonly scheduler?: SchedulerOptions;
  readonly worker?: WorkerOptions;
  /** Settings per named circuit breaker; unnamed ones use `breakerDefaults`. */
  readonly breakers?: Readonly<Record<string, BreakerOptions>>;
  readonly breakerDefaults?: BreakerOptions;
  /**
   * Run each job id once: claimed before the handler runs, remembered after it completed; a copy of
   * a completed id is acked without running and reported as `duplicate`. `MemoryIdempotencyStore`
   * (one process) or `PostgresIdempotencyStore` (every worker). Default: none (at-least-once).
   */
  readonly idempotency?: IdempotencyStore;
  /**
   * Where `publish(..., { jobId, deduplicate: true })` reserves job ids so that a second publish of a
   * live id returns the existing job (docs/guide/deduplication.md): `MemoryDedupStore` (one
   * process) or `PostgresDedupStore` (shared). Workers release an id when its job ends.
   */
  readonly deduplication?: DedupStore;
  /**
   * Keep every dead letter in a stream (the dead-letter log) that operators browse, search and replay
   * with warren/ops; this process moves them there from the parking queues. Default: off.
   */
  readonly deadLetterLog?: WarrenDeadLetterLogOptions;
  /**
   * Record each job's lifecycle (published, started, completed, retrying, dead) in the history stream,
   * for `ops.job(id)` / `warren job <id>`. Default: off (its cost on the job path is on docs/performance.md).
   */
  readonly history?: HistoryOptions;
  /**
   * Count each job queue's runs per bucket of time (completed, failed, retried, dead-lettered, wait and run
   * percentiles, depth, oldest waiting job) into streams of the namespace, for the dashboard's graphs
   * (docs/guide/aggregates.md). `{}` turns it on with a bucket of a minute. Default: off.
   */
  readonly aggregates?: AggregatesOptions;
  /**
   * The live job events this process sends to subscribers in other processes (`warren.events.subscribe`,
   * `createEventSubscriber`: docs/guide/events.md). On by default; an event is sent only when a subscriber's
   * filter matches it, so with no subscriber it costs a map lookup.
   */
  readonly events?: EventsOptions;
  /**
   * The transactional outbox (docs/guide/outbox.md): `warren.outbox.publish(tx, …)` writes jobs
   * in your PostgreSQL transaction, and this process relays committed rows to the broker unless
   * `relay: false`. Default: none.
   */
  readonly outbox?: OutboxOptions;
  /**
   * Metrics and traces: `warrenMetrics()` and `warrenTracing()` from `warren/observability` (or your own
   * hooks). Default: none, and the hot path does no work for them.
   */
  readonly instrumentation?: Instrumentation | readonly Instrumentation[];
  /**
   * Job classes (or defined jobs) that may be steps of a routing slip (`warren.slip()`). Each gets a
   * companion job `<name>.slip` on its queue, with its attempts and backoff, that carries the slip's
   * envelope. List them in every process that starts or runs slips; a process runs the steps whose handler
   * it has. A job whose options say `activity: true` is an activity without being listed here.
   */
  readonly activities?: readonly JobRef[];
  /**
   * Where the fan-in of a slip's parallel steps is counted. Default a MemoryJoinStore: right for one
   * worker process only; give a PostgresJoinStore when several processes run the branches.
   */
  readonly joins?: JoinStore;
  /**
   * The shared secret that signs the records warren writes for itself (job control, the schedule
   * registry, the dead-letter log's letters and markers, the history, control requests and replies) and
   * that their readers require (docs/reference/trust.md). A string of at least 32 characters, or a
   * list while keys rotate: the first signs, every one verifies. Give every process and warren/ops of the
   * namespace the same. Default: none (records are checked for shape and against the plan, not proven);
   * a shorter key is a ConfigurationError.
   */
  readonly signingKey?: SigningKeyOption;
}

/** The topology options inside WarrenOptions, resolved: createWarren and warren/ops plan alike. */
export function resolveWarrenTopologyOptions(options: WarrenOptions): ResolvedTopologyOptions {
  return resolveTopologyOptions({
    ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
    ...(options.delay ? { delay: options.delay } : {}),
    ...(options.queues?.deliveryLimit !== undefined ? { deliveryLimit: options.queues.deliveryLimit } : {}),
    ...(options.queues?.durable !== undefined ? { durable: options.queues.durable } : {}),
    ...(options.queues?.expiresMs !== undefined ? { queueExpiresMs: options.queues.expiresMs } : {}),
  });
}

const KNOWN = {
  url: true,
  connection: true,
  namespace: true,
  topology: true,
  handlers: true,
  jobs: true,
  logger: true,
  jobDefaults: true,
  delay: true,
  queues: true,
  publisher: true,
  scheduler: true,
  worker: true,
  breakers: true,
  breakerDefaults: true,
  idempotency: true,
  deduplication: true,
  deadLetterLog: true,
  history: true,
  aggregates: true,
  events: true,
  outbox: true,
  instrumentation: true,
  activities: true,
  joins: true,
  signingKey: true,
} as const satisfies Record<keyof WarrenOptions, true>;

const KNOWN_QUEUES = { deliveryLimit: true, durable: true, expiresMs: true } as const satisfies Record<
  keyof NonNullable<WarrenOptions['queues']>,
  true
>;

/**
 * A key `createWarren` does not know is a mistake to report (`connection.tls`, `worker.prefech`),
 * never something to ignore silently. The nested objects are checked where they are resolved.
 */
export function checkWarrenOptionKeys(options: WarrenOptions): void {
  checkKnownKeys('options', options, KNOWN);
  checkKnownKeys('queues', options.queues, KNOWN_QUEUES);
}
