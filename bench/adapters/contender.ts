import type { Job } from '../lib/job';

/** Where a contender finds its brokers; the same value is handed to the worker process. */
export interface ContenderEnv {
  amqpUrl: string;
  redisHost: string;
  redisPort: number;
  /** Redis key prefix, unique per run, so BullMQ keys never collide with other users of the server. */
  redisPrefix: string;
}

/** What a scenario needs beyond the basics, so that setup can declare it (scenario 6: delays). */
export interface ContenderFeatures {
  /** Delayed jobs, with the contender's production settings for them. */
  delays?: boolean;
  /** The job queue's type, declared through the contender's own topology. Default quorum. */
  queueType?: QueueType;
  /**
   * The fail-once scenarios' backoff before the retry, in ms (default 0): raw amqplib and Rascal go through
   * one TTL queue of this delay, warren through its delay levels.
   */
  retryBackoffMs?: number;
  /**
   * warren routes its jobs through a direct exchange of its topology (the wire contract of issue 30), and the
   * raw publisher of warren's messages publishes to it. Others publish to the queue.
   */
  jobsExchange?: boolean;
}

export type QueueType = 'classic' | 'quorum';

export interface Consumer {
  stop(): Promise<void>;
}

/**
 * One job system under test. Each run gets a fresh instance and a fresh queue.
 * Scenarios build concurrency themselves (e.g. 100 callers each awaiting `publish`).
 */
export interface Contender {
  readonly name: string;
  /**
   * Connect and declare `queue` (durable; quorum on RabbitMQ). Idempotent: a worker process calls it for the
   * same queue.
   */
  setup(queue: string, features?: ContenderFeatures): Promise<void>;
  /** Resolves only once the broker has confirmed the job. */
  publish(job: Job): Promise<void>;
  /** The contender's batch API if it has one, else concurrent publishes; resolves when all are confirmed. */
  publishBulk(jobs: Job[]): Promise<void>;
  /** Untimed: fill the queue as fast as possible with jobs that `consume` reads like published ones. */
  prefill(jobs: Job[]): Promise<void>;
  /**
   * `concurrency` is the prefetch on AMQP, the worker concurrency on BullMQ. The handler runs before each
   * ack; a handler returning a promise (an async handler) is awaited before it.
   */
  consume(concurrency: number, handler: (job: Job) => void | Promise<void>): Promise<Consumer>;
  /**
   * Scenario 6, where the contender has delayed jobs: resolves once the job is stored, to run no earlier than
   * `delayMs` from now.
   */
  publishDelayed?(job: Job, delayMs: number): Promise<void>;
  /**
   * Scenario 6 (single delayed jobs): like `publishDelayed`, but only exact while no other delayed job
   * waits (raw amqplib's per-message TTL queue). Contenders with `publishDelayed` need not have it.
   */
  publishDelayedAlone?(job: Job, delayMs: number): Promise<void>;
  /** Untimed: declare what `publishDelayedAlone` needs for these delays. */
  prepareDelays?(delaysMs: readonly number[]): Promise<void>;
  /** The step delays are rounded up to (warren: its delay unit); lateness is measured past the rounded delay. */
  readonly delayUnitMs?: number;
  /**
   * Scenario 8: consume at concurrency 1 with a handler that publishes the job `next` returns (if any),
   * awaiting its confirm as a handler awaiting `publish` would, before the delivery is acked.
   */
  consumeWithFollowUp?(next: (job: Job) => Job | undefined): Promise<Consumer>;
  /** Scenario 6: like `prefill`, with jobs allowed one retry without backoff. */
  prefillRetryable?(jobs: Job[]): Promise<void>;
  /**
   * Scenario 6: fails every job's first attempt; `onCompleted` runs in the successful second one, before its
   * ack.
   */
  consumeFailingOnce?(concurrency: number, onCompleted: (job: Job) => void): Promise<Consumer>;
  /** Close connections; with `deleteQueue`, also delete what `setup` declared. */
  teardown(opts: { deleteQueue: boolean }): Promise<void>;
}
