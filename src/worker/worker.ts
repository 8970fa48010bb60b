import type { Logger } from '../core';
import type { ConnectionManager } from '../connection';
import { JobLimiters } from './job-limiters';
import { createJobProcessor, type DeliveryPathDeps } from './delivery-path';
import { IsolatePool } from './isolate-pool';
import { FairShareConsumer, type FairShareStats } from './fair-share-consumer';
import { QueueConsumer } from './queue-consumer';
import type { ConsumerSettings, PartitionKeyLimits } from './consumer-settings';
import type { JobProcessor } from './job-processor';
import { PartitionedConsumer, type PartitionStats } from './partitioned-consumer';
import type { MembershipProof } from '../coordination';
import { MAX_CONSUMER_TIMEOUT_MS } from '../topology';
import type { PlannedJobQueue, PlannedKeyLimits, TopologyPlan } from '../topology';
import { KeyLimits, type KeyLimitOverride } from './key-limits';
import { runLimitMs, type RegisteredJob } from './registered-job';

/** The worker builds the rate limiters of its jobs itself, from their `limiter` and the connection. */
export interface WorkerDeps extends Omit<DeliveryPathDeps, 'limiterFor' | 'inPlaceRetries' | 'isolates'> {
  readonly manager: ConnectionManager;
  readonly reapplyTopology: () => Promise<void>;
  readonly concurrencyOf: (queueName: string) => number;
  /**
   * The proof of an ordered partition membership's heartbeats (the record codec's), one per membership
   * exchange; without it heartbeats are unsigned.
   */
  readonly membershipProof?: (membersExchange: string) => MembershipProof;
}

export interface ConsumerHealth {
  readonly queue: string;
  readonly consuming: boolean;
  readonly paused: boolean;
  readonly activeJobs: number;
  /** Deliveries handled since the process started: a processing rate is its change over time. */
  readonly handled: number;
  /** A queue with fairness: its scheduler's waiting jobs, unkeyed deliveries and busiest keys. */
  readonly fairness?: FairShareStats;
  /** A queue with ordered partitions: the partitions this process owns and the members it hears. */
  readonly partitions?: PartitionStats;
}

/** The consumers of every queue this process has handlers for. */
export class Worker {
  private readonly consumers = new Map<string, QueueConsumer | FairShareConsumer | PartitionedConsumer>();
  private readonly paused = new Set<string>();
  private readonly limiters: JobLimiters;
  /** The isolate pool of each job that does not run inline (`@Job({ isolate })`). */
  private readonly isolates = new Map<string, IsolatePool>();
  private started = false;

  constructor(
    private readonly deps: WorkerDeps,
    private readonly log: Logger,
  ) {
    this.limiters = new JobLimiters({ ...deps, log });
    for (const [name, job] of deps.jobs)
      if (job.isolate !== undefined)
        this.isolates.set(
          name,
          new IsolatePool(name, job.isolate, log.child({ component: 'isolate', job: name })),
        );
    const processor = createJobProcessor({
      ...deps,
      isolates: this.isolates,
      limiterFor: (jobName) => this.limiters.limiterFor(jobName),
      inPlaceRetries: () => deps.manager.broker?.features.delayedRetry === true,
    });
    const queueNames = new Set([...deps.jobs.values()].map((job) => job.planned.queueName));
    for (const queue of deps.plan.queues) {
      // a lane is consumed by its queue's FairShareConsumer
      if (queue.role !== 'job' || queue.lane !== undefined || !queueNames.has(queue.name)) continue;
      const partitions = queue.partitions;
      const settings = consumerSettings(queue, deps);
      const consumerDeps = {
        manager: deps.manager,
        processor,
        reapplyTopology: deps.reapplyTopology,
        log: log.child({ queue: queue.key }),
      };
      if (partitions !== undefined && !partitions.drainsQueue) {
        const lanes = lanesOf(deps.plan, queue.name);
        // while the count changes, the previous partitions are drained and the current ones left alone
        const consumed = lanes.filter((lane) => lane.lane!.draining === partitions.previous.length > 0);
        this.consumers.set(
          queue.key,
          new PartitionedConsumer(queue, settings, consumerDeps, {
            partitions: consumed,
            heartbeatMs: deps.options.partitionHeartbeatMs,
            handoverGraceMs: deps.options.shutdownGraceMs,
            membershipProof: deps.membershipProof?.(partitions.membersExchange),
            ...partitionKeyLimits(queue, deps.jobs.values(), settings, {
              processor,
              delayUnitMs: deps.plan.delay.unitMs,
            }),
          }),
        );
        continue;
      }
      this.consumers.set(
        queue.key,
        queue.fairness === undefined
          ? new QueueConsumer(queue, settings, consumerDeps)
          : new FairShareConsumer(queue, lanesOf(deps.plan, queue.name), settings, consumerDeps),
      );
    }
  }

  /** The connection's ready hook: a channel per consumer, consuming again if the worker runs. */
  async open(generation: number): Promise<void> {
    await Promise.all([...this.consumers.values()].map((consumer) => consumer.open(generation)));
    await this.limiters.open(generation);
    if (this.started) this.readControlAhead();
  }

  /** Starts consuming, then joins the refill elections of the jobs' rate limits. */
  async start(): Promise<void> {
    // every processor loads before any job is consumed: a broken one fails start(), it never spawns in a loop
    await Promise.all([...this.isolates.values()].map((pool) => pool.start()));
    this.started = true;
    await Promise.all(
      [...this.consumers.entries()]
        .filter(([key]) => !this.paused.has(key))
        .map(([, consumer]) => consumer.start()),
    );
    await this.limiters.start();
    this.readControlAhead();
  }

  /**
   * A consuming worker reads the job-control stream, if it exists, in the background as it starts (and
   * after a reconnect): left to the first delayed job, that read (follow, a mark record) made it run
   * tens of milliseconds late. A failed read is only logged: the first delayed job reads again.
   */
  private readControlAhead(): void {
    const control = this.deps.jobControl;
    if (!control?.readAhead || this.consumers.size === 0) return;
    control.readAhead().catch((err: unknown) => {
      this.log.debug({ err }, 'job control not read ahead; the first delayed job reads it');
    });
  }

  get isStarted(): boolean {
    return this.started;
  }

  /** Stops consuming a queue (running jobs finish); survives reconnects until `resume`. */
  async pause(queueKey: string): Promise<void> {
    this.paused.add(queueKey);
    await this.consumers.get(queueKey)?.pause();
  }

  async resume(queueKey: string): Promise<void> {
    this.paused.delete(queueKey);
    if (this.started) await this.consumers.get(queueKey)?.resume();
  }

  /**
   * Sends jobs waiting for a rate-limit permit back to their queues and hands every refill token on. On
   * close, before `stop`: another process refills the permits while this one drains its jobs.
   */
  stopLimiters(): Promise<void> {
    return this.limiters.stop();
  }

  async stop(graceMs: number): Promise<void> {
    this.started = false;
    await Promise.all([...this.consumers.values()].map((consumer) => consumer.stop(graceMs)));
    await Promise.all([...this.isolates.values()].map((pool) => pool.close()));
  }

  /** Whether a queue this process consumes has jobs with per-key limits (it follows the limits stream). */
  get hasKeyLimits(): boolean {
    return [...this.consumers.values()].some((c) => c instanceof PartitionedConsumer && c.hasKeyLimits);
  }

  /** A per-key limit override from the limits stream, applied wherever its target (a job or a limit) runs here. */
  applyKeyLimitOverride(target: string, key: string, override: KeyLimitOverride | undefined): void {
    for (const consumer of this.consumers.values())
      if (consumer instanceof PartitionedConsumer) consumer.applyOverride(target, key, override);
  }

  health(): ConsumerHealth[] {
    return [...this.consumers.entries()].map(([queue, consumer]) => ({
      queue,
      consuming: consumer.isConsuming,
      paused: this.paused.has(queue),
      activeJobs: consumer.activeJobs,
      handled: consumer.handled,
      ...(consumer instanceof FairShareConsumer ? { fairness: consumer.stats() } : {}),
      ...(consumer instanceof PartitionedConsumer ? { partitions: consumer.stats() } : {}),
    }));
  }
}

/**
 * How long a delivery of `queueName` may stay unacked before the broker steps in: the longest job
 * timeout on the queue plus a minute. warren settles every delivery by its job's timeout (a handler that
 * ignores its signal no longer counts), so the broker's own `consumer_timeout` (30 min by default)
 * must not cut a job short first (RabbitMQ 3.12 and later honour the consumer argument).
 */
const CONSUMER_TIMEOUT_MARGIN_MS = 60_000;
/**
 * Deliveries over their key's rate a partition parks until their slot, and how far ahead: a saturated key's
 * backlog of up to 30 s waits in its owner (unacked, about 1 KB of memory each beside its body) instead of
 * taking a publish, a confirm and an ack per job through the delay levels.
 */
const PARKED_PER_PARTITION = 1_000;
const PARK_HORIZON_MS = 30_000;

/** The lanes of a queue with fairness, current then draining. */
/**
 * The per-key limits of the jobs of a queue with `order: 'none'` partitions (none when no job has any): up to
 * `concurrency` deliveries over their key's limit wait aside per partition, and (with a per-key rate) up to 4 ×
 * `concurrency` more whose key's rate frees a slot within 11 delay units (re-delayed jobs back early for it), and
 * up to PARKED_PER_PARTITION parked for their key's slot within PARK_HORIZON_MS; the rest are re-delayed.
 */
function partitionKeyLimits(
  queue: PlannedJobQueue,
  jobs: Iterable<RegisteredJob>,
  settings: ConsumerSettings,
  using: { readonly processor: Pick<JobProcessor, 'defer'>; readonly delayUnitMs: number },
): { keyLimits?: PartitionKeyLimits } {
  const { processor, delayUnitMs } = using;
  if (queue.partitions?.ordered !== false) return {};
  const limits = new Map<string, PlannedKeyLimits>();
  for (const job of jobs)
    if (job.planned.queueName === queue.name && job.planned.keyLimits !== undefined)
      limits.set(job.planned.name, job.planned.keyLimits);
  if (limits.size === 0) return {};
  const hasRate = [...limits.values()].some((l) => l.rate !== undefined);
  return {
    keyLimits: {
      limits: new KeyLimits(limits, delayUnitMs),
      heldPerPartition: settings.concurrency,
      // only a rate frees slots at known times for a re-delayed job to come back early for, or to park for
      dueHeldPerPartition: hasRate ? 4 * settings.concurrency : 0,
      parkedPerPartition: hasRate ? PARKED_PER_PARTITION : 0,
      parkHorizonMs: PARK_HORIZON_MS,
      defer: (delivery, delayMs, limit) => processor.defer(delivery, delayMs, limit),
    },
  };
}

function lanesOf(plan: TopologyPlan, queueName: string): PlannedJobQueue[] {
  return plan.queues.filter((q): q is PlannedJobQueue => q.role === 'job' && q.lane?.of === queueName);
}

function consumerTimeoutOf(queueName: string, jobs: Iterable<RegisteredJob>, holdsAhead: boolean): number {
  let longest = 0;
  for (const job of jobs)
    if (job.planned.queueName === queueName) longest = Math.max(longest, runLimitMs(job));
  // A held delivery waits at most one run (no more are held than run at once), then runs.
  return (holdsAhead ? 2 * longest : longest) + CONSUMER_TIMEOUT_MARGIN_MS;
}

/**
 * How many deliveries a queue's consumer holds beyond its concurrency: `worker.prefetchAhead`, at most the
 * concurrency. None on a queue with priorities (a held job would run before a higher one that came after
 * it), with batch jobs (a batch fills from the prefetch, sized for them) or with fair share (its own
 * scheduler holds what its lanes deliver).
 */
function consumerSettings(queue: PlannedJobQueue, deps: WorkerDeps): ConsumerSettings {
  const concurrency = deps.concurrencyOf(queue.name);
  const ahead = aheadOf(queue, concurrency, deps.jobs.values(), deps.options.prefetchAhead);
  return {
    concurrency,
    ahead,
    // an ordered partition holds a delivery through every attempt and backoff (retries in place)
    consumerTimeoutMs:
      queue.partitions !== undefined
        ? MAX_CONSUMER_TIMEOUT_MS
        : consumerTimeoutOf(queue.name, deps.jobs.values(), ahead > 0),
  };
}

function aheadOf(
  queue: PlannedJobQueue,
  concurrency: number,
  jobs: Iterable<RegisteredJob>,
  prefetchAhead: number,
): number {
  // a partition's key gate holds its deliveries in order already
  if (queue.maxPriority !== undefined || queue.fairness !== undefined || queue.partitions !== undefined)
    return 0;
  for (const job of jobs)
    if (job.planned.queueName === queue.name && (job.batch !== undefined || job.breakers.length > 0))
      return 0;
  return Math.min(prefetchAhead, concurrency);
}
