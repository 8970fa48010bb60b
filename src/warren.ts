import 'reflect-metadata';
import { EventEmitter } from 'node:events';
import { BreakerPauses, BreakerRegistry, resolveBreakerOptions, type BreakerState } from './breaker';
import { ConfirmPublisher, ConnectionManager, resolveConnectionOptions } from './connection';
import {
  checkBackoff,
  ConfigurationError,
  checkInteger,
  combineInstrumentation,
  createSilentLogger,
  resolveJobDefaults,
  ShutdownError,
  type EmitEvent,
  type Instrumentation,
  type JobDefinition,
  type JobHandler,
  type Logger,
  type PublishedJob,
  type PublishOptions,
  type PublishOrigin,
  type WarrenEvents,
} from './core';
import { readJobDefinition, type JobClass, type JobData } from './decorators';
import {
  JobPublisher,
  ResultChannel,
  resolvePublisherOptions,
  type BatchResult,
  type ResultHandle,
} from './publisher';
import {
  applyTopology,
  requireBrokerFeatures,
  deleteTopology,
  planTopology,
  type TopologyPlan,
} from './topology';
import { DeadLetters, resolveWorkerOptions, Worker, type ConsumerHealth, type RegisteredJob } from './worker';
import { checkWarrenOptionKeys, resolveWarrenTopologyOptions, type WarrenOptions } from './warren-options';
import type { ScheduleInfo, ScheduleOptions } from './scheduler';
import { checkCronData, readSchedulingDeclarations, Scheduling } from './warren-scheduling';
import type { AddScheduleOptions, TriggeredSchedule } from './warren-runtime-schedules';
import { createControl } from './warren-control';
import { createDeadLetterLog } from './warren-dead-letter-log';
import { announcePublished, createHistory, recordHistory } from './warren-history';
import { createOutbox, type WarrenOutbox } from './warren-outbox';
import type { Outbox } from './outbox';
import { instrumentationTarget } from './warren-instrumentation';
import { planSlipJobs, SlipBuilder } from './workflow';
import type { JobControl } from './job-control';
import { createJobControl, rescheduleAt, type RescheduleOptions } from './warren-job-control';

/**
 * Augment this interface to type `publish` by job name:
 * `declare module 'warren' { interface WarrenJobs { 'email.welcome': { userId: string } } }`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: an interface (not a type) so users can augment it
export interface WarrenJobs {}

/** A map of job name to payload type. */
export type JobMap = Record<string, unknown>;
type JobName<TJobs> = [keyof TJobs] extends [never] ? string : Extract<keyof TJobs, string>;
type JobPayload<TJobs, K> = K extends keyof TJobs ? TJobs[K] : unknown;

/**
 * One job of a {@link Warren.publishMany} call: a job class or a job name, its payload (typed like
 * `publish`'s) and its publish options.
 */
export interface PublishManyEntry<TJobs = WarrenJobs, J = JobClass | JobName<TJobs>> {
  readonly job: J;
  readonly data: J extends JobClass ? JobData<J> : JobPayload<TJobs, J>;
  readonly options?: PublishOptions;
}

/**
 * The outcome of one job of a {@link Warren.publishMany} call: `confirmed` by the broker, or `failed`
 * with the typed error a `publish` of it alone would have rejected with.
 */
export type PublishManyResult = BatchResult;

export interface HealthReport {
  readonly connected: boolean;
  readonly blocked: boolean;
  readonly consumers: readonly ConsumerHealth[];
  /** Connected, and every started queue consumer (not paused) is subscribed. */
  readonly healthy: boolean;
}

/**
 * A warren instance: one connection, one confirm channel for publishing, a consumer channel per
 * queue with handlers. Create it with {@link createWarren}.
 */
export class Warren<TJobs extends object = WarrenJobs> extends EventEmitter<WarrenEvents> {
  /** List, replay and purge dead letters. */
  readonly deadLetters: DeadLetters;
  private closing: Promise<void> | undefined;
  private readonly signalHandlers: (() => void)[] = [];

  /** @internal use createWarren */
  constructor(
    /** @internal the applied plan; tooling plans with planTopology (warren/ops) */
    readonly plan: TopologyPlan,
    private readonly manager: ConnectionManager,
    private readonly confirms: ConfirmPublisher,
    private readonly publisher: JobPublisher,
    private readonly worker: Worker,
    private readonly breakers: BreakerRegistry,
    private readonly shutdownGraceMs: number,
    /** @internal */
    readonly log: Logger,
    deadLetters: DeadLetters,
    private readonly scheduling: Scheduling,
    private readonly pauses: BreakerPauses,
    private readonly control: ReturnType<typeof createControl>,
    /** Parts stopped on close after the worker (dead-letter collector, history writer). */
    private readonly addOns: readonly { stop(): Promise<void> }[] = [],
    private readonly outboxParts?: WarrenOutbox,
    private readonly slipActivities: ReadonlySet<string> = new Set(),
    private readonly jobControl?: JobControl,
  ) {
    // An async listener's rejection comes to the method below instead of crashing the process.
    super({ captureRejections: true });
    this.deadLetters = deadLetters;
    // An async listener that rejects is logged and ignored, like one that throws: a listener's bug must
    // not crash the worker (and since `failed` fires before the dead letter is confirmed, the job would
    // come back and crash the next process too).
    const onRejection = (error: unknown, event: string | symbol) =>
      log.error({ err: error, event: String(event) }, 'an event listener rejected; ignored');
    Object.defineProperty(this, EventEmitter.captureRejectionSymbol, { value: onRejection });
  }

  /**
   * The transactional outbox (`createWarren({ outbox })`): `publish(tx, job, data, options)` writes a job
   * in your PostgreSQL transaction; `backlog()` tells what waits. Throws a ConfigurationError when the
   * warren was created without `outbox`.
   */
  get outbox(): Outbox<TJobs> {
    if (!this.outboxParts)
      throw new ConfigurationError('warren.outbox needs createWarren({ outbox: { pool } })');
    return this.outboxParts.outbox as unknown as Outbox<TJobs>;
  }

  /** This instance's id, as warren/ops lists it among the processes (random, fixed for its life). */
  get processId(): string {
    return this.control.processId;
  }

  /**
   * Publishes a job for its result (README, "Awaited results"): resolves on the broker's confirm with a
   * handle whose `result({ timeoutMs })` resolves with the handler's return value or rejects with a
   * JobResultError (JOB_FAILED after the last attempt, RESULT_TIMEOUT, RESULT_LOST).
   */
  publishWithResult(job: string | JobClass, data: unknown, options?: PublishOptions): Promise<ResultHandle> {
    if (this.closing) return Promise.reject(new ShutdownError('warren is closed; publish refused'));
    const name = typeof job === 'string' ? job : readJobDefinition(job).name;
    return this.publisher.publishWithResult(name, data, options);
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
    if (this.closing) return Promise.reject(new ShutdownError('warren is closed; publish refused'));
    const name = typeof job === 'string' ? job : readJobDefinition(job).name;
    return announcePublished(
      this.publisher.publish(name, data, options),
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
    if (this.closing) throw new ShutdownError('warren is closed; publishMany refused');
    const entries = jobs as readonly PublishManyEntry<TJobs, JobClass | string>[];
    const names = new Map<JobClass, string>(); // one metadata read per class, not per job
    return this.publisher.publishMany(entries, (job) => {
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
    if (this.closing) throw new ShutdownError('warren is closed; cannot start');
    await this.worker.start();
    await this.scheduling.start();
  }

  /**
   * Publishes `job` with `data` on a cron pattern (5 fields, or 6 with seconds first), once per tick
   * across every process: whichever process leads fires it. The schedule lives in this process; to
   * keep it through restarts and leader changes, every process declares the same schedules at
   * startup (README, "Cron"), or use {@link Warren.addSchedule} to keep it on the broker. Replaces a
   * schedule of the same id (default: the job name).
   *
   * @example
   * await warren.schedule('report.daily', '0 9 * * *', { kind: 'daily' }, { tz: 'Asia/Tokyo' });
   */
  schedule<K extends JobName<TJobs>>(
    job: K,
    pattern: string,
    data?: JobPayload<TJobs, K>,
    options?: ScheduleOptions,
  ): Promise<ScheduleInfo>;
  schedule<C extends JobClass>(
    job: C,
    pattern: string,
    data?: JobData<C>,
    options?: ScheduleOptions,
  ): Promise<ScheduleInfo>;
  schedule(
    job: string | JobClass,
    pattern: string,
    data?: unknown,
    options?: ScheduleOptions,
  ): Promise<ScheduleInfo> {
    if (this.closing) return Promise.reject(new ShutdownError('warren is closed; schedule refused'));
    const name = typeof job === 'string' ? job : readJobDefinition(job).name;
    return this.scheduling.schedule(name, pattern, data, options);
  }

  /**
   * Removes a schedule (declared by `schedule` or `@Cron`) from this process. False when there was none with
   * that id.
   */
  unschedule(id: string): boolean {
    return this.scheduling.unschedule(id);
  }

  /** The schedules this process knows, with their next tick. */
  schedules(): ScheduleInfo[] {
    return this.scheduling.schedules();
  }

  /**
   * Adds (or replaces) a schedule in the broker's schedule registry: every process that schedules sees it,
   * the leader fires it, and it outlives this process and every leader change (README, "Cron"). Validated
   * here first (pattern, time zone, job, data); an id declared in code (`@Cron`, `schedule()`) is refused.
   *
   * @example
   * await warren.addSchedule('report.send', '0 9 * * 1-5', { kind: 'weekday' }, { id: 'report.weekday' });
   */
  addSchedule<K extends JobName<TJobs>>(
    job: K,
    pattern: string,
    data?: JobPayload<TJobs, K>,
    options?: AddScheduleOptions,
  ): Promise<void>;
  addSchedule<C extends JobClass>(
    job: C,
    pattern: string,
    data?: JobData<C>,
    options?: AddScheduleOptions,
  ): Promise<void>;
  addSchedule(job: string | JobClass, pattern: string, data?: unknown, options?: AddScheduleOptions) {
    const name = typeof job === 'string' ? job : readJobDefinition(job).name;
    return this.scheduling.addSchedule(name, pattern, data, options);
  }

  /** Removes a schedule from the broker's registry (code-declared ids are refused: pause them). */
  removeSchedule(id: string): Promise<void> {
    return this.scheduling.removeSchedule(id);
  }

  /** Pauses a schedule, registry or code-declared, in every process until resumed; kept on the broker. */
  pauseSchedule(id: string): Promise<void> {
    return this.scheduling.setSchedulePaused(id, true);
  }

  resumeSchedule(id: string): Promise<void> {
    return this.scheduling.setSchedulePaused(id, false);
  }

  /** Publishes one firing of a schedule now, from this process (no leader needed): `<id>@manual-<ms>`. */
  triggerSchedule(id: string): Promise<TriggeredSchedule> {
    return this.scheduling.triggerSchedule(id);
  }

  /** Whether this process is the cron leader now (see the `leadershipChanged` event). */
  get isLeader(): boolean {
    return this.scheduling.isLeader;
  }

  /**
   * Starts building a routing slip over the classes listed in the `activities` option (see the README,
   * "Workflows").
   *
   * @example
   * await warren.slip().then(ReserveStock, { sku: 'A1' }).then(ChargeCard, { cents: 500 }).run();
   */
  slip(): SlipBuilder {
    return new SlipBuilder((name, data, options) => {
      if (this.closing) return Promise.reject(new ShutdownError('warren is closed; slip refused'));
      return this.publisher.publish(name, data, options);
    }, this.slipActivities);
  }

  /**
   * Cancels a delayed job by id, from any process: it is dropped (event `cancelled`) when it comes due.
   * README, "Cancel, promote, reschedule".
   */
  cancelDelayed(jobId: string): Promise<void> {
    return this.jobControl!.cancel(jobId);
  }

  /** Runs a delayed job published with `{ controllable: true }` now; the delayed original is dropped. */
  promote(jobId: string): Promise<void> {
    return this.jobControl!.promote(jobId);
  }

  /** Moves a delayed job to `runAt` or `delayMs` from now (earlier only if it was published `controllable`). */
  reschedule(jobId: string, options: RescheduleOptions): Promise<void> {
    return this.jobControl!.reschedule(jobId, rescheduleAt(jobId, options));
  }

  /** Stops consuming a queue (by topology key) until `resume`; running jobs finish. Survives reconnects. */
  pause(queue: string): Promise<void> {
    return this.pauses.pauseByUser(queue);
  }

  /** Undoes `pause`. A queue whose circuit breaker is open stays paused until the breaker half-opens. */
  resume(queue: string): Promise<void> {
    return this.pauses.resumeByUser(queue);
  }

  health(): HealthReport {
    const consumers = this.worker.health();
    const connected = this.manager.isConnected;
    const healthy = connected && (!this.worker.isStarted || consumers.every((c) => c.paused || c.consuming));
    return { connected, blocked: this.manager.isBlocked, consumers, healthy };
  }

  /**
   * Graceful shutdown: cancel consumers, let running jobs finish within the grace period, abort the
   * rest and return them to their queue, wait for outstanding publisher confirms, close.
   */
  close(options: { graceMs?: number } = {}): Promise<void> {
    this.closing ??= this.shutdown(options.graceMs ?? this.shutdownGraceMs);
    return this.closing;
  }

  /**
   * Closes gracefully on SIGTERM and SIGINT, then lets the process exit. Returns a function that removes the
   * handlers.
   */
  closeOnSignals(signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
    const handler = (signal: NodeJS.Signals) => {
      this.log.info({ signal }, 'signal received; closing gracefully');
      this.close().then(
        () => process.exit(0),
        (error: unknown) => {
          this.log.error({ err: error }, 'graceful close failed');
          process.exit(1);
        },
      );
    };
    for (const signal of signals) process.once(signal, handler);
    const remove = () => {
      for (const signal of signals) process.removeListener(signal, handler);
    };
    this.signalHandlers.push(remove);
    return remove;
  }

  /**
   * Deletes every queue and exchange of this instance's plan, messages included. For tests and
   * tooling. Stops this instance's consumers first (running jobs get the grace period): they would
   * otherwise re-declare the queues they lost. Publishing still works until `close()`.
   */
  async deleteTopology(): Promise<void> {
    await this.worker.stop(this.shutdownGraceMs);
    await deleteTopology(this.plan, () => this.manager.openChannel());
  }

  private async shutdown(graceMs: number): Promise<void> {
    for (const remove of this.signalHandlers) remove();
    this.control.listener.close();
    // Before the publisher flushes: the relay waits for its batch's confirms and claims no more.
    await this.outboxParts?.relay?.stop();
    // First, so that another process leads (and refills permits) while this one drains its jobs.
    await this.scheduling.stop();
    await this.worker.stop(graceMs);
    for (const addOn of this.addOns) await addOn.stop().catch(() => undefined);
    await this.publisher.close();
    const flushed = await this.confirms.flush(graceMs);
    if (!flushed)
      this.log.warn(
        { pending: this.confirms.pendingCount },
        'closing with publishes the broker has not confirmed; they fail with SHUTTING_DOWN',
      );
    await this.confirms.close();
    this.breakers.shutdown();
    await this.manager.close();
    this.log.info('closed');
  }
}

/**
 * Creates a warren: checks every option and declaration, plans the topology, connects, declares the
 * topology and opens the publisher. Call `start()` to run handlers.
 *
 * @example
 * const warren = await createWarren({ url: process.env.AMQP_URL, topology, handlers: [new
 * WelcomeEmail(mailer)] });
 * await warren.start();
 * await warren.publish('email.welcome', { userId: '123' });
 * warren.closeOnSignals();
 */
export async function createWarren<TJobs extends object = WarrenJobs>(
  options: WarrenOptions = {},
): Promise<Warren<TJobs>> {
  checkWarrenOptionKeys(options);
  const log = options.logger ?? createSilentLogger();
  const connectionOptions = resolveConnectionOptions({
    ...options.connection,
    ...(options.url !== undefined ? { url: options.url } : {}),
  });
  const topologyOptions = resolveWarrenTopologyOptions(options);
  const publisherOptions = resolvePublisherOptions(options.publisher);
  const workerOptions = resolveWorkerOptions(options.worker);
  const jobDefaults = resolveJobDefaults(options.jobDefaults);
  const breakerDefaults = resolveBreakerOptions(options.breakerDefaults, 'breakerDefaults');

  const handlers = new Map<string, JobHandler>();
  const definitions: JobDefinition[] = [];
  for (const handler of options.handlers ?? []) {
    if (typeof handler === 'function')
      throw new ConfigurationError(
        `handlers takes instances (new ${(handler as { name: string }).name}(...)); pass classes you only publish as jobs`,
      );
    const definition = readJobDefinition(handler);
    if (handlers.has(definition.name))
      throw new ConfigurationError(`two handlers for job '${definition.name}'`);
    handlers.set(definition.name, handler as JobHandler);
    definitions.push(definition);
  }
  for (const job of options.jobs ?? []) definitions.push(readJobDefinition(job));
  const slips = planSlipJobs(
    options.activities ?? [],
    handlers,
    (event, ...args) => emit(event, ...args),
    jobDefaults.timeoutMs,
    options.joins,
  );
  definitions.push(...slips.definitions);
  const schedulingDeclarations = readSchedulingDeclarations(
    options.scheduler,
    [...handlers.values()],
    options.jobs ?? [],
  );
  const plan = planTopology({
    topology: options.topology ?? {},
    jobs: definitions,
    options: topologyOptions,
    leaderElection: schedulingDeclarations.scheduler.enabled,
    limiters: [...schedulingDeclarations.limiters.values()].map((limiter) => ({
      key: limiter.key,
      maxPermits: limiter.max,
    })),
  });
  await checkCronData(plan, schedulingDeclarations);

  const registered = new Map<string, RegisteredJob>();
  for (const [name, handler] of [...handlers, ...slips.handlers]) {
    const planned = plan.jobs.get(name)!;
    const path = `@Job('${name}')`;
    registered.set(name, {
      planned,
      handler,
      attempts: checkInteger(`${path}.attempts`, planned.attempts ?? jobDefaults.attempts, 1),
      backoff: checkBackoff(`${path}.backoff`, planned.backoff ?? jobDefaults.backoff),
      timeoutMs: checkInteger(`${path}.timeoutMs`, planned.timeoutMs ?? jobDefaults.timeoutMs, 1),
      schema: planned.schema,
      breakers: planned.breakers ?? [],
    });
  }

  // A store that cannot work (database down, table of another shape) fails here, not on the first job.
  await options.idempotency?.prepare?.();
  await options.joins?.prepare?.();
  await options.deduplication?.prepare?.();
  const manager = new ConnectionManager(connectionOptions, log.child({ component: 'connection' }));
  const confirms = new ConfirmPublisher(
    manager,
    { maxBuffered: publisherOptions.maxBuffered, maxMessageBytes: publisherOptions.brokerMaxMessageBytes },
    log.child({ component: 'publisher' }),
  );
  const instrumentation = combineInstrumentation(
    options.instrumentation === undefined
      ? []
      : Array.isArray(options.instrumentation)
        ? (options.instrumentation as readonly Instrumentation[])
        : [options.instrumentation as Instrumentation],
  );
  const results = new ResultChannel(() => manager.openConfirmChannel());
  const jobControl = createJobControl(plan, manager, confirms, publisherOptions.timeoutMs);
  const publisher = new JobPublisher(
    plan,
    confirms,
    publisherOptions,
    instrumentation,
    results,
    options.deduplication,
    (message, queueName) => jobControl.storeCopy(message, queueName),
  );
  let warren: Warren<TJobs> | undefined;
  const emit: EmitEvent = (event, ...args) => {
    try {
      (warren as EventEmitter | undefined)?.emit(event, ...(args as unknown[]));
    } catch (error) {
      log.error({ err: error, event }, 'an event listener threw; ignored');
    }
  };
  const outbox = await createOutbox(options.outbox, publisher, log.child({ component: 'outbox' }), emit);
  let worker: Worker | undefined;
  const pauses = new BreakerPauses(
    { pause: (queue) => worker!.pause(queue), resume: (queue) => worker!.resume(queue) },
    log.child({ component: 'breaker' }),
  );
  for (const job of registered.values())
    for (const breaker of job.breakers) pauses.use(breaker, job.planned.queue);
  const breakers = new BreakerRegistry(
    options.breakers ?? {},
    breakerDefaults,
    (name, state) => onBreakerState(name, state),
    log.child({ component: 'breaker' }),
  );
  const reapplyTopology = async () => {
    requireBrokerFeatures(plan, manager.broker);
    return applyTopology(plan, () => manager.openChannel());
  };
  const publishAndAnnounce = (
    name: string,
    data: unknown,
    publishOptions?: PublishOptions,
    origin?: PublishOrigin,
  ) =>
    announcePublished(
      publisher.publish(name, data, publishOptions, origin),
      publishOptions,
      emit,
      () => (warren?.listenerCount('published') ?? 0) > 0,
    );
  const scheduling = new Scheduling({
    plan,
    declarations: schedulingDeclarations,
    manager,
    confirms,
    publish: (job, data, jobId) => publishAndAnnounce(job, data, { jobId }, 'cron'),
    publishTimeoutMs: publisherOptions.timeoutMs,
    reapplyTopology,
    emit,
    log,
  });
  worker = new Worker(
    {
      plan,
      jobs: registered,
      publisher: confirms,
      options: workerOptions,
      emit,
      listens: (event) => (warren?.listenerCount(event) ?? 0) > 0,
      log: log.child({ component: 'worker' }),
      publishJob: publishAndAnnounce,
      breaker: (name, queue) => {
        pauses.use(name, queue);
        return breakers.get(name);
      },
      idempotency: options.idempotency,
      deduplication: options.deduplication,
      jobControl,
      limiterFor: (jobName) => scheduling.limiterFor(jobName),
      instrumentation,
      manager,
      reapplyTopology,
      concurrencyOf: (queueName) =>
        Math.max(
          ...[...registered.values()]
            .filter((job) => job.planned.queueName === queueName)
            .map((job) => job.planned.concurrency ?? jobDefaults.concurrency),
        ),
    },
    log.child({ component: 'worker' }),
  );

  function onBreakerState(name: string, state: BreakerState): void {
    emit('breakerStateChanged', { breaker: name, state });
    pauses.stateChanged(name, state);
  }

  const control = createControl({
    plan,
    manager,
    pauses,
    breakers: () => breakers,
    consumers: () => worker!.health(),
    isLeader: () => scheduling.isLeader,
    schedules: () => scheduling.schedules(),
    log: log.child({ component: 'control' }),
  });
  const deadLetterLog = createDeadLetterLog(
    options.deadLetterLog,
    plan,
    manager,
    confirms,
    publisherOptions.timeoutMs,
    log.child({ component: 'dead-letter-log' }),
  );
  manager.onReady(async () => reapplyTopology());
  const history = createHistory(
    options.history,
    plan,
    manager,
    control.processId,
    log.child({ component: 'history' }),
  );
  // Before the consumers open: a queue an operator paused must not consume for a moment on (re)connect.
  manager.onReady(async (_model, generation) => control.listener.open(generation));
  manager.onReady(async (_model, generation) => {
    await confirms.open(generation);
    await worker!.open(generation);
    await scheduling.open(generation);
    await deadLetterLog?.follow();
  });
  manager.on('connected', ({ url }) => emit('connected', { url }));
  manager.on('disconnected', ({ error }) => emit('disconnected', { error }));
  manager.on('blocked', ({ reason }) => emit('blocked', { reason }));
  manager.on('unblocked', () => emit('unblocked'));
  await manager.start();

  warren = new Warren<TJobs>(
    plan,
    manager,
    confirms,
    publisher,
    worker,
    breakers,
    workerOptions.shutdownGraceMs,
    log,
    new DeadLetters(
      plan,
      manager,
      confirms,
      workerOptions.republishTimeoutMs,
      log.child({ component: 'dead-letters' }),
    ),
    scheduling,
    pauses,
    control,
    [deadLetterLog, history, jobControl].filter((p) => p !== undefined),
    outbox,
    slips.activities,
    jobControl,
  );
  if (history) recordHistory(history, warren);
  outbox?.relay?.start();
  instrumentation?.attach?.(instrumentationTarget(warren, plan, manager, () => scheduling.isLeader));
  return warren;
}
