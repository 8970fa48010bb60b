import 'reflect-metadata';
import type { EventEmitter } from 'node:events';
import { ConfigurationError, ShutdownError, type PublishedJob, type PublishOptions } from '../core';
import { readJobDefinition, type JobClass, type JobData } from '../decorators';
import type { Outbox } from '../outbox';
import type { ResultHandle } from '../publisher';
import { deleteTopology, type TopologyPlan } from '../topology';
import type { DeadLetters } from '../worker';
import { SlipBuilder } from '../workflow';
import { reportHealth, type HealthReport } from './health';
import { announcePublished } from './history';
import { rescheduleAt, type RescheduleOptions } from './job-control';
import type { WarrenParts } from './parts';
import { ScheduledWarren } from './scheduled-warren';
import { closeOnSignals, shutDown } from './shutdown';
import type { JobName, JobPayload, PublishManyEntry, PublishManyResult, WarrenJobs } from './warren-jobs';

let partsOf: <T extends object>(warren: Warren<T>) => WarrenParts;

/**
 * A warren instance: one connection, one confirm channel for publishing, a consumer channel per
 * queue with handlers. Create it with {@link createWarren}.
 */
export class Warren<TJobs extends object = WarrenJobs> extends ScheduledWarren<TJobs> {
  /** List, replay and purge dead letters. */
  readonly deadLetters: DeadLetters;
  readonly #parts: WarrenParts;
  readonly #signalHandlers: (() => void)[] = [];
  readonly #warnedDeprecated = new Set<string>();

  static {
    partsOf = (warren) => warren.#parts;
  }

  /** Made by {@link createWarren}; not meant to be called directly. */
  constructor(parts: WarrenParts) {
    super(parts.scheduling, parts.log);
    this.#parts = parts;
    this.deadLetters = parts.deadLetters;
  }

  /**
   * The transactional outbox (`createWarren({ outbox })`): `publish(tx, job, data, options)` writes a job
   * in your PostgreSQL transaction; `backlog()` tells what waits. Throws a ConfigurationError when the
   * warren was created without `outbox`.
   */
  get outbox(): Outbox<TJobs> {
    if (!this.#parts.outbox)
      throw new ConfigurationError('warren.outbox needs createWarren({ outbox: { pool } })');
    return this.#parts.outbox.outbox as unknown as Outbox<TJobs>;
  }

  /** This instance's id, as warren/ops lists it among the processes (random, fixed for its life). */
  get processId(): string {
    return this.#parts.control.processId;
  }

  /**
   * Publishes a job for its result (README, "Awaited results"): resolves on the broker's confirm with a
   * handle whose `result({ timeoutMs })` resolves with the handler's return value or rejects with a
   * JobResultError (JOB_FAILED after the last attempt, RESULT_TIMEOUT, RESULT_LOST).
   */
  publishWithResult(job: string | JobClass, data: unknown, options?: PublishOptions): Promise<ResultHandle> {
    if (this.isClosing) return Promise.reject(new ShutdownError('warren is closed; publish refused'));
    const name = typeof job === 'string' ? job : readJobDefinition(job).name;
    return this.#parts.publisher.publishWithResult(name, data, options);
  }

  /**
   * Publishes a job and resolves once the broker confirmed it (persistent, mandatory).
   *
   * @example
   * await warren.publish('email.welcome', { userId: '123' }, { jobId: 'welcome-123', delayMs: 60_000 });
   * await warren.publish(WelcomeEmail, { userId: '123' });
   */
  publish<K extends JobName<TJobs>>(
    name: K,
    data: JobPayload<TJobs, K>,
    options?: PublishOptions,
  ): Promise<PublishedJob>;
  publish<C extends JobClass>(job: C, data: JobData<C>, options?: PublishOptions): Promise<PublishedJob>;
  publish(job: string | JobClass, data: unknown, options?: PublishOptions): Promise<PublishedJob> {
    if (this.isClosing) return Promise.reject(new ShutdownError('warren is closed; publish refused'));
    const name = typeof job === 'string' ? job : readJobDefinition(job).name;
    return announcePublished(
      this.#parts.publisher.publish(name, data, options),
      options,
      (event, ...args) => (this as EventEmitter).emit(event, ...(args as unknown[])),
      () => this.listenerCount('published') > 0,
    );
  }

  /**
   * Publishes many jobs at once, pipelined on the confirm channel, and resolves with one result per
   * job in input order: `confirmed`, or `failed` with its typed error (an unroutable job fails alone,
   * with PUBLISH_UNROUTABLE). Every job's payload and options are checked before anything is sent: the
   * first invalid one rejects the whole call with its usual error (PAYLOAD_INVALID,
   * CONFIGURATION_INVALID, UNKNOWN_JOB) carrying its position in `batchIndex`, and nothing is sent.
   *
   * @example
   * const results = await warren.publishMany(users.map((u) => ({ job: WelcomeEmail, data: { userId: u.id } })));
   * const failed = results.filter((r) => r.status === 'failed');
   */
  async publishMany<const J extends readonly (JobClass | JobName<TJobs>)[]>(
    jobs: {
      readonly [I in keyof J]: PublishManyEntry<TJobs, J[I]>;
    },
  ): Promise<PublishManyResult[]> {
    if (this.isClosing) throw new ShutdownError('warren is closed; publishMany refused');
    const entries = jobs as readonly PublishManyEntry<TJobs, JobClass | string>[];
    const names = new Map<JobClass, string>(); // one metadata read per class, not per job
    return this.#parts.publisher.publishMany(entries, (job) => {
      if (typeof job === 'string') return job;
      const known = names.get(job);
      if (known !== undefined) return known;
      const name = readJobDefinition(job).name;
      names.set(job, name);
      return name;
    });
  }

  /**
   * Starts consuming every queue this process has handlers for, and joins the cron leader election (if the
   * scheduler is enabled).
   */
  async start(): Promise<void> {
    if (this.isClosing) throw new ShutdownError('warren is closed; cannot start');
    await this.#parts.worker.start();
    await this.#parts.scheduling.start();
  }

  /**
   * Starts building a routing slip over the classes listed in the `activities` option (see the README,
   * "Workflows").
   *
   * @example
   * await warren.slip().step(ReserveStock, { sku: 'A1' }).step(ChargeCard, { cents: 500 }).run();
   */
  slip(): SlipBuilder {
    return new SlipBuilder((name, data, options) => {
      if (this.isClosing) return Promise.reject(new ShutdownError('warren is closed; slip refused'));
      return this.#parts.publisher.publish(name, this.#parts.slipSeal.seal(data), options);
    }, this.#parts.slipActivities);
  }

  /**
   * Cancels a delayed job by id, from any process: it is dropped (event `cancelled`) when it comes due.
   * README, "Cancel, promote, reschedule".
   */
  cancelDelayed(jobId: string): Promise<void> {
    return this.#parts.jobControl.cancel(jobId);
  }

  /** Runs a delayed job published with `{ controllable: true }` now; the delayed original is dropped. */
  promote(jobId: string): Promise<void> {
    return this.#parts.jobControl.promote(jobId);
  }

  /** Moves a delayed job to `runAt` or `delayMs` from now (earlier only if it was published `controllable`). */
  reschedule(jobId: string, options: RescheduleOptions): Promise<void> {
    return this.#parts.jobControl.reschedule(jobId, rescheduleAt(jobId, options));
  }

  /**
   * Stops consuming a queue (by topology key) in this process only, until `resumeLocal`; running jobs
   * finish. Survives reconnects. To pause a queue in every process, use `ops.pause` (warren/ops).
   */
  pauseLocal(queue: string): Promise<void> {
    return this.#parts.pauses.pauseByUser(queue);
  }

  /**
   * Undoes `pauseLocal`. A queue whose circuit breaker is open, or that an operator paused, stays paused
   * until that holder lets go too.
   */
  resumeLocal(queue: string): Promise<void> {
    return this.#parts.pauses.resumeByUser(queue);
  }

  /** @deprecated Use `pauseLocal` (the same, in this process only); `ops.pause` pauses every process. */
  pause(queue: string): Promise<void> {
    this.#warnDeprecated('pause', 'pauseLocal');
    return this.pauseLocal(queue);
  }

  /** @deprecated Use `resumeLocal`. */
  resume(queue: string): Promise<void> {
    this.#warnDeprecated('resume', 'resumeLocal');
    return this.resumeLocal(queue);
  }

  /** The versioning policy's one warning per deprecated name, the first time it is used. */
  #warnDeprecated(name: string, replacement: string): void {
    if (this.#warnedDeprecated.has(name)) return;
    this.#warnedDeprecated.add(name);
    this.#parts.log.warn(
      { deprecated: name, replacement },
      `warren.${name}() is deprecated: use ${replacement}()`,
    );
  }

  health(): HealthReport {
    return reportHealth(this.#parts.manager, this.#parts.worker, this.#parts.trust);
  }

  /**
   * Graceful shutdown: cancel consumers, let running jobs finish within the grace period, abort the
   * rest and return them to their queue, wait for outstanding publisher confirms, close.
   */
  close(options: { graceMs?: number } = {}): Promise<void> {
    return this.closeOnce(() => {
      for (const remove of this.#signalHandlers) remove();
      return shutDown(this.#parts, options.graceMs ?? this.#parts.shutdownGraceMs);
    });
  }

  /**
   * Closes gracefully on SIGTERM and SIGINT, then lets the process exit. Returns a function that removes the
   * handlers.
   */
  closeOnSignals(signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
    const remove = closeOnSignals(() => this.close(), this.#parts.log, signals);
    this.#signalHandlers.push(remove);
    return remove;
  }

  /**
   * Deletes every queue, stream and exchange of this instance's plan, messages and records included
   * (the job-control, schedule, dead-letter-log and history streams are in the plan). For tests and
   * tooling. Stops this instance's consumers first (running jobs get the grace period): they would
   * otherwise re-declare the queues they lost. Publishing still works until `close()`.
   */
  async deleteTopology(): Promise<void> {
    const { worker, jobControl, plan, manager, shutdownGraceMs } = this.#parts;
    await worker.stop(shutdownGraceMs);
    await jobControl.stop();
    await deleteTopology(plan, () => manager.openChannel());
  }
}

/**
 * The named parts behind a Warren, for internal users (warren/ops, tests): not part of the public type,
 * and not exported from the package's entry. (Not marked internal: stripped, it would leave
 * src/warren/index.d.ts re-exporting a name its module no longer declares.)
 */
export function warrenParts<T extends object>(warren: Warren<T>): WarrenParts {
  return partsOf(warren);
}

/**
 * The topology plan a Warren declared (its queue and exchange names): for tests and tooling inside this
 * repository; not exported from the package's entry.
 */
export function planOf<T extends object>(warren: Warren<T>): TopologyPlan {
  return partsOf(warren).plan;
}
