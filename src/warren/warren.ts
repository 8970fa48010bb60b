// size-exception: 14 deprecated aliases (cron, delayed, pause: ~90 lines) stay one minor release; then ~240.
import 'reflect-metadata';
import { EventEmitter } from 'node:events';
import {
  ConfigurationError,
  ShutdownError,
  type PublishedJob,
  type PublishOptions,
  type WarrenEvents,
} from '../core';
import type { DefinedJob, JobClass, JobData, JobRef } from '../decorators';
import type { JobEventSubscriber } from '../job-events';
import type { Outbox } from '../outbox';
import type { ResultHandle } from '../publisher';
import { deleteTopology, type TopologyPlan } from '../topology';
import type { ScheduleInfo, TriggeredSchedule } from '../scheduler';
import type { DeadLetters } from '../worker';
import { SlipBuilder } from '../workflow';
import { DeprecationWarnings } from './deprecated-aliases';
import { emitToEach, ignoreListenerRejections, refuseUnknownEvents } from './event-sink';
import { reportHealth, type HealthReport } from './health';
import { announcePublished } from './history';
import type { RescheduleOptions } from './job-control';
import type { WarrenParts } from './parts';
import {
  removeNamespace,
  type NamespaceRemovalResult,
  type RemoveNamespaceOptions,
} from './remove-namespace';
import { closeOnSignals, shutDown } from './shutdown';
import { WarrenCron } from './warren-cron';
import { WarrenDelayed } from './warren-delayed';
import {
  nameOrRejection,
  jobNameResolver,
  type JobName,
  type JobPayload,
  type PublishManyEntry,
  type PublishManyResult,
  type WarrenJobs,
} from './warren-jobs';

let partsOf: <T extends object>(warren: Warren<T>) => WarrenParts;

/**
 * A warren instance: one connection, one confirm channel for publishing, a consumer channel per
 * queue with handlers; it emits the {@link WarrenEvents}. Create it with {@link createWarren}. Its own
 * methods publish, run and close; `cron`, `delayed`, `deadLetters` and `outbox` are objects of their own.
 */
export class Warren<TJobs extends object = WarrenJobs> extends EventEmitter<WarrenEvents> {
  /** The cron schedules: in this process (`schedule`) or in the broker's registry (`add`). */
  readonly cron: WarrenCron<TJobs>;
  /** Cancel, promote and reschedule delayed jobs by id. */
  readonly delayed: WarrenDelayed;
  /** List, replay and purge dead letters. */
  readonly deadLetters: DeadLetters;
  readonly #parts: WarrenParts;
  readonly #signalHandlers: (() => void)[] = [];
  readonly #deprecations: DeprecationWarnings;
  #closing: Promise<void> | undefined;
  #removing = false;

  static {
    partsOf = (warren) => warren.#parts;
  }

  /** Made by {@link createWarren}; not meant to be called directly. */
  constructor(parts: WarrenParts) {
    super({ captureRejections: true }); // a listener's rejection is logged, see ignoreListenerRejections
    ignoreListenerRejections(this, parts.log);
    refuseUnknownEvents(this);
    this.#parts = parts;
    this.#deprecations = new DeprecationWarnings(parts.log);
    this.cron = new WarrenCron(parts.scheduling, () => this.isClosing);
    // Through the sink: a cancel reaches this instance's listeners and the live events' subscribers.
    this.delayed = new WarrenDelayed(parts.jobControl, parts.events.emit);
    this.deadLetters = parts.deadLetters;
    // An operator removes the namespace (warren/ops with force): close, unless this instance is the remover.
    parts.control.onRemoval(() => {
      if (this.#removing) return;
      this.close().catch((error: unknown) => parts.log.error({ err: error }, 'close for removal failed'));
    });
  }

  /** Whether `close()` was called. */
  private get isClosing(): boolean {
    return this.#closing !== undefined;
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

  /**
   * Live job events from every process of the namespace (docs/guide/events.md): subscribe to a job id, a
   * job name or a queue; a live view, at most once (the history is the record).
   *
   * @example
   * const subscription = await warren.events.subscribe({ jobId: 'report-42' });
   * for await (const event of subscription) if (event.kind === 'completed') break;
   */
  get events(): JobEventSubscriber {
    return this.#parts.eventSubscriber;
  }

  /** This instance's id, as warren/ops lists it among the processes (random, fixed for its life). */
  get processId(): string {
    return this.#parts.control.processId;
  }

  /**
   * Publishes a job for its result (docs/guide/results.md): resolves on the broker's confirm with a
   * handle whose `result({ timeoutMs })` resolves with the handler's return value or rejects with a
   * JobResultError (JOB_FAILED after the last attempt, RESULT_TIMEOUT, RESULT_LOST).
   */
  publishWithResult<D, R, I>(
    job: DefinedJob<D, R, I>,
    data: I,
    options?: PublishOptions,
  ): Promise<ResultHandle<Awaited<R>>>;
  publishWithResult(job: string | JobClass, data: unknown, options?: PublishOptions): Promise<ResultHandle>;
  publishWithResult(job: string | JobRef, data: unknown, options?: PublishOptions): Promise<ResultHandle> {
    if (this.isClosing) return Promise.reject(new ShutdownError('warren is closed; publish refused'));
    const name = nameOrRejection(job);
    if (typeof name !== 'string') return name;
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
  publish<C extends JobRef>(job: C, data: JobData<C>, options?: PublishOptions): Promise<PublishedJob>;
  publish(job: string | JobRef, data: unknown, options?: PublishOptions): Promise<PublishedJob> {
    if (this.isClosing) return Promise.reject(new ShutdownError('warren is closed; publish refused'));
    const name = nameOrRejection(job);
    if (typeof name !== 'string') return name;
    return announcePublished(
      this.#parts.publisher.publish(name, data, options),
      options,
      (event, ...args) => emitToEach(this, event, args, this.#parts.log),
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
  async publishMany<const J extends readonly (JobRef | JobName<TJobs>)[]>(
    jobs: {
      readonly [I in keyof J]: PublishManyEntry<TJobs, J[I]>;
    },
  ): Promise<PublishManyResult[]> {
    if (this.isClosing) throw new ShutdownError('warren is closed; publishMany refused');
    const entries = jobs as readonly PublishManyEntry<TJobs, JobRef | string>[];
    return this.#parts.publisher.publishMany(entries, jobNameResolver());
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
   * Starts building a routing slip over the classes listed in the `activities` option (see docs/guide/workflows.md).
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

  health(): HealthReport {
    const { manager, worker, trust, history } = this.#parts;
    return reportHealth(manager, worker, trust, history?.server);
  }

  /**
   * Graceful shutdown: cancel consumers, let running jobs finish within the grace period, abort the
   * rest and return them to their queue, wait for outstanding publisher confirms, close.
   */
  close(options: { graceMs?: number } = {}): Promise<void> {
    this.#closing ??= (() => {
      for (const remove of this.#signalHandlers) remove();
      return shutDown(this.#parts, options.graceMs ?? this.#parts.shutdownGraceMs);
    })();
    return this.#closing;
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
   * otherwise re-declare the queues they lost; and the history's background indexing and lookup server,
   * whose reads of the history would race its deletion (a round in progress declared the index streams
   * again, and on RabbitMQ 3.10 a consume of a stream being deleted crashed its channel, which closes the
   * connection). Publishing still works until `close()`. It does not stop
   * cron, other processes or a reconnect from declaring the plan again, and leaves what this configuration
   * does not plan: to remove an application's namespace, use {@link Warren.removeNamespace}.
   */
  async deleteTopology(): Promise<void> {
    const { worker, jobControl, plan, manager, shutdownGraceMs, history } = this.#parts;
    await worker.stop(shutdownGraceMs);
    await jobControl.stop();
    await history?.server?.stop();
    await history?.indexer.stop();
    await deleteTopology(plan, () => manager.openChannel());
  }

  /**
   * Removes this instance's namespace from the broker, like BullMQ's `obliterate()`: every queue,
   * exchange, stream and marker its naming gives the namespace (docs/operating/removing-a-namespace.md),
   * by exact name, never by prefix. Refuses with NamespaceInUseError (NAMESPACE_IN_USE) while other
   * processes of the namespace answer on the control exchange; with `force` it asks them to stop (they
   * close) and waits up to `timeoutMs`. Then it closes this instance (so that nothing here declares the
   * namespace again) and deletes over a connection of its own. Messages and records are lost.
   *
   * @example
   * const { stopped, queues } = await warren.removeNamespace({ force: true });
   */
  async removeNamespace(options: RemoveNamespaceOptions = {}): Promise<NamespaceRemovalResult> {
    if (this.isClosing)
      throw new ShutdownError('warren is closed; removeNamespace needs it open to ask who runs');
    const parts = this.#parts;
    this.#removing = true;
    try {
      return await removeNamespace(
        {
          plan: parts.plan,
          openChannel: () => parts.manager.openChannel(),
          trust: parts.trust,
          selfId: parts.control.processId,
          closeSelf: () => this.close(),
          connection: parts.connectionOptions,
          log: parts.log.child({ component: 'removal' }),
        },
        options,
      );
    } finally {
      this.#removing = false;
    }
  }

  // Deprecated aliases (deprecated-aliases.ts), kept for one minor release: Warren's methods before its facades.

  /** @deprecated Use `warren.cron.schedule` (same arguments); this alias goes in the next minor release. */
  get schedule(): WarrenCron<TJobs>['schedule'] {
    this.#deprecations.warn('schedule');
    return this.cron.schedule.bind(this.cron) as WarrenCron<TJobs>['schedule'];
  }

  /** @deprecated Use `warren.cron.unschedule`; this alias goes in the next minor release. */
  unschedule(id: string): boolean {
    this.#deprecations.warn('unschedule');
    return this.cron.unschedule(id);
  }

  /** @deprecated Use `warren.cron.list()`; this alias goes in the next minor release. */
  schedules(): ScheduleInfo[] {
    this.#deprecations.warn('schedules');
    return this.cron.list();
  }

  /** @deprecated Use `warren.cron.add` (same arguments); this alias goes in the next minor release. */
  get addSchedule(): WarrenCron<TJobs>['add'] {
    this.#deprecations.warn('addSchedule');
    return this.cron.add.bind(this.cron) as WarrenCron<TJobs>['add'];
  }

  /** @deprecated Use `warren.cron.remove`; this alias goes in the next minor release. */
  removeSchedule(id: string): Promise<void> {
    this.#deprecations.warn('removeSchedule');
    return this.cron.remove(id);
  }

  /** @deprecated Use `warren.cron.pause`; this alias goes in the next minor release. */
  pauseSchedule(id: string): Promise<void> {
    this.#deprecations.warn('pauseSchedule');
    return this.cron.pause(id);
  }

  /** @deprecated Use `warren.cron.resume`; this alias goes in the next minor release. */
  resumeSchedule(id: string): Promise<void> {
    this.#deprecations.warn('resumeSchedule');
    return this.cron.resume(id);
  }

  /** @deprecated Use `warren.cron.trigger`; this alias goes in the next minor release. */
  triggerSchedule(id: string): Promise<TriggeredSchedule> {
    this.#deprecations.warn('triggerSchedule');
    return this.cron.trigger(id);
  }

  /** @deprecated Use `warren.cron.isLeader`; this alias goes in the next minor release. */
  get isLeader(): boolean {
    this.#deprecations.warn('isLeader');
    return this.cron.isLeader;
  }

  /** @deprecated Use `warren.delayed.cancel`; this alias goes in the next minor release. */
  cancelDelayed(jobId: string): Promise<void> {
    this.#deprecations.warn('cancelDelayed');
    return this.delayed.cancel(jobId).then(() => undefined);
  }

  /** @deprecated Use `warren.delayed.promote`; this alias goes in the next minor release. */
  promote(jobId: string): Promise<void> {
    this.#deprecations.warn('promote');
    return this.delayed.promote(jobId);
  }

  /** @deprecated Use `warren.delayed.reschedule`; this alias goes in the next minor release. */
  reschedule(jobId: string, options: RescheduleOptions): Promise<void> {
    this.#deprecations.warn('reschedule');
    return this.delayed.reschedule(jobId, options);
  }

  /** @deprecated Use `pauseLocal` (the same, in this process only); `ops.pause` pauses every process. */
  pause(queue: string): Promise<void> {
    this.#deprecations.warn('pause');
    return this.pauseLocal(queue);
  }

  /** @deprecated Use `resumeLocal`. */
  resume(queue: string): Promise<void> {
    this.#deprecations.warn('resume');
    return this.resumeLocal(queue);
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
