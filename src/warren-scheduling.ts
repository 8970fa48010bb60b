import { ConfigurationError, UnknownJobError, type EmitEvent, type JobDefinition, type Logger } from './core';
import type { ConfirmPublisher, ConnectionManager } from './connection';
import { readCronMetadata, readJobDefinition } from './decorators';
import {
  resolveSchedule,
  resolveSchedulerOptions,
  Scheduler,
  type LeadershipSignal,
  type ResolvedSchedulerOptions,
  type ScheduleInfo,
  type ScheduleOptions,
  type ScheduleSpec,
  type SchedulerOptions,
  type TickLedger,
} from './scheduler';
import type { TopologyPlan } from './topology';
import {
  checkSameLimit,
  CronLedger,
  LeaderElection,
  RateLimiter,
  resolveLimiterOptions,
  type PermitGate,
  type ResolvedLimiter,
} from './worker';
import { checkScheduleData } from './warren-schedule-data';
import {
  RuntimeSchedules,
  type AddScheduleOptions,
  type TriggeredSchedule,
} from './warren-runtime-schedules';
import { ScheduleRegistry } from './warren-schedule-registry';

/** What createWarren learns from the job classes about cron and rate limits, before planning the topology. */
export interface SchedulingDeclarations {
  readonly scheduler: ResolvedSchedulerOptions;
  readonly crons: readonly ScheduleSpec[];
  /** Limiters by key. */
  readonly limiters: ReadonlyMap<string, ResolvedLimiter>;
  /** Job name → limiter key, for the jobs this process runs. */
  readonly limiterOfJob: ReadonlyMap<string, string>;
}

/**
 * Reads `@Cron` from every job class of this process (handlers and publish-only classes) and
 * `limiter` from the jobs it runs; validates all of it. Throws ConfigurationError naming the path.
 */
export function readSchedulingDeclarations(
  input: SchedulerOptions | undefined,
  handlers: readonly object[],
  jobClasses: readonly object[],
): SchedulingDeclarations {
  const classes = new Map<unknown, object>();
  for (const source of [...handlers, ...jobClasses])
    classes.set(typeof source === 'function' ? source : source.constructor, source);
  const hasCron = [...classes.values()].some((source) => readCronMetadata(source).length > 0);
  const scheduler = resolveSchedulerOptions(input, hasCron);

  const crons = new Map<string, { spec: ScheduleSpec; at: string }>();
  for (const source of classes.values()) {
    const metadata = readCronMetadata(source);
    if (metadata.length === 0) continue;
    const definition = readJobDefinition(source);
    const label = typeof source === 'function' ? source.name : source.constructor.name;
    for (const cron of metadata) {
      const at = `${label} @Cron('${cron.pattern}')`;
      const spec = resolveSchedule(
        at,
        {
          job: definition.name,
          pattern: cron.pattern,
          data: cron.options.data,
          id: cron.options.id,
          tz: cron.options.tz,
          missedTicks: cron.options.missedTicks,
          source: 'decorator',
        },
        scheduler,
      );
      const earlier = crons.get(spec.id);
      if (earlier)
        throw new ConfigurationError(
          `${at} and ${earlier.at} share the schedule id '${spec.id}': give one of them its own { id }`,
        );
      crons.set(spec.id, { spec, at });
    }
  }

  const limiters = new Map<string, { path: string; limiter: ResolvedLimiter }>();
  const limiterOfJob = new Map<string, string>();
  for (const handler of handlers) {
    const definition: JobDefinition = readJobDefinition(handler);
    if (definition.limiter === undefined) continue;
    const path = `@Job('${definition.name}').limiter`;
    const limiter = resolveLimiterOptions(path, definition.name, definition.limiter);
    const earlier = limiters.get(limiter.key);
    if (earlier) checkSameLimit(path, limiter, earlier);
    else limiters.set(limiter.key, { path, limiter });
    limiterOfJob.set(definition.name, limiter.key);
  }
  return {
    scheduler,
    crons: [...crons.values()].map((c) => c.spec),
    limiters: new Map([...limiters].map(([key, entry]) => [key, entry.limiter])),
    limiterOfJob,
  };
}

export interface SchedulingDeps {
  readonly plan: TopologyPlan;
  readonly declarations: SchedulingDeclarations;
  readonly manager: ConnectionManager;
  readonly confirms: ConfirmPublisher;
  /** Publishes one cron firing with its deterministic job id. */
  readonly publish: (job: string, data: unknown, jobId: string) => Promise<unknown>;
  readonly publishTimeoutMs: number;
  readonly reapplyTopology: () => Promise<void>;
  readonly emit: EmitEvent;
  readonly log: Logger;
}

/** The least time to read the schedule registry to its end, ms. */
const REGISTRY_LOAD_MIN_MS = 10_000;

const NEVER_LEADER: LeadershipSignal = { isLeader: false, onChange: () => () => undefined };
const NO_LEDGER: TickLedger = { read: async () => new Map(), write: async () => undefined };

/**
 * The cron and rate-limit part of a warren instance: the scheduler with its leader election and
 * ledger, and one rate limiter (permit consumer, refill election, refiller) per limit key.
 */
export class Scheduling {
  private readonly scheduler: Scheduler;
  private readonly election: LeaderElection | undefined;
  private readonly registry: ScheduleRegistry;
  private readonly runtime: RuntimeSchedules;
  private readonly registryLoadMs: number;
  private readonly limiters = new Map<string, RateLimiter>();
  private readonly limiterByJob = new Map<string, RateLimiter>();
  private started = false;

  constructor(private readonly deps: SchedulingDeps) {
    const { plan, manager, declarations, log } = deps;
    let ledger = NO_LEDGER;
    if (declarations.scheduler.enabled) {
      this.election = new LeaderElection(
        manager,
        plan.naming.leaderQueue(),
        deps.reapplyTopology,
        log.child({ component: 'leader-election' }),
      );
      this.election.onChange((isLeader) => deps.emit('leadershipChanged', { isLeader }));
      ledger = new CronLedger(manager, deps.confirms, plan.naming.cronLedgerQueue(), deps.publishTimeoutMs);
    }
    this.scheduler = new Scheduler({
      publish: deps.publish,
      leadership: this.election ?? NEVER_LEADER,
      ledger,
      log: log.child({ component: 'scheduler' }),
    });
    const isFollowing = declarations.scheduler.enabled;
    this.registryLoadMs = Math.max(REGISTRY_LOAD_MIN_MS, deps.publishTimeoutMs);
    this.registry = new ScheduleRegistry({
      manager,
      confirms: deps.confirms,
      stream: plan.naming.scheduleRegistry(),
      publishTimeoutMs: deps.publishTimeoutMs,
      log: log.child({ component: 'schedule-registry' }),
      onChange: (id) => this.runtime.reconcile(id),
    });
    this.runtime = new RuntimeSchedules({
      scheduler: this.scheduler,
      registry: this.registry,
      defaults: declarations.scheduler,
      plan,
      isFollowing,
      loadTimeoutMs: this.registryLoadMs,
      publish: deps.publish,
      log: log.child({ component: 'scheduler' }),
    });
    for (const spec of declarations.crons) this.runtime.addLocal(spec);
    for (const [key, limiter] of declarations.limiters) {
      const limiterLog = log.child({ component: 'rate-limiter', limiter: key });
      this.limiters.set(
        key,
        new RateLimiter(
          manager,
          limiter,
          plan.naming.permitQueue(key),
          plan.naming.limiterLeaderQueue(key),
          deps.reapplyTopology,
          limiterLog,
        ),
      );
    }
    for (const [job, key] of declarations.limiterOfJob) this.limiterByJob.set(job, this.limiters.get(key)!);
  }

  get isLeader(): boolean {
    return this.election?.isLeader ?? false;
  }

  /** The connection's ready hook. */
  async open(generation: number): Promise<void> {
    // After a reconnect, catch up with the registry before rejoining the election: a schedule paused
    // meanwhile must not fire once more.
    if (this.started && this.deps.declarations.scheduler.enabled)
      await this.registry.load(this.registryLoadMs).catch(() => this.registry.open());
    await Promise.all([
      this.election?.open(generation),
      ...[...this.limiters.values()].map((limiter) => limiter.open(generation)),
    ]);
  }

  /** Joins the elections; from now on this process fires schedules while it leads. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    // The registry is read to its end first: a paused schedule never fires at start.
    if (this.deps.declarations.scheduler.enabled) await this.registry.load(this.registryLoadMs);
    this.scheduler.start();
    await Promise.all([
      this.election?.start(),
      ...[...this.limiters.values()].map((limiter) => limiter.start()),
    ]);
  }

  /** Stops firing at once, sends waiting jobs back to their queues, and hands every token on. */
  async stop(): Promise<void> {
    this.scheduler.stop();
    for (const limiter of this.limiters.values()) limiter.releaseWaiters();
    await Promise.all([
      this.election?.stop(),
      ...[...this.limiters.values()].map((limiter) => limiter.close()),
      this.registry.close(),
    ]);
  }

  limiterFor(jobName: string): PermitGate | undefined {
    return this.limiterByJob.get(jobName);
  }

  async schedule(
    job: string,
    pattern: string,
    data: unknown,
    options: ScheduleOptions = {},
  ): Promise<ScheduleInfo> {
    const at = `schedule('${options.id ?? job}')`;
    if (!this.deps.declarations.scheduler.enabled) {
      throw new ConfigurationError(
        `${at}: the scheduler is disabled in this process; pass scheduler: { enabled: true } to createWarren (it declares the leader-election queue)`,
      );
    }
    const planned = this.deps.plan.jobs.get(job);
    if (planned === undefined) throw new UnknownJobError(job, { known: [...this.deps.plan.jobs.keys()] });
    const spec = resolveSchedule(
      at,
      {
        job,
        pattern,
        data,
        id: options.id,
        tz: options.tz,
        missedTicks: options.missedTicks,
        source: 'runtime',
      },
      this.deps.declarations.scheduler,
    );
    await checkScheduleData(at, planned.schema, spec.data);
    return this.runtime.addLocal(spec);
  }

  unschedule(id: string): boolean {
    return this.runtime.removeLocal(id);
  }

  /** Adds or replaces a schedule in the broker's registry (README, "Cron"). */
  addSchedule(job: string, pattern: string, data: unknown, options?: AddScheduleOptions): Promise<void> {
    return this.runtime.add(job, pattern, data, options);
  }

  removeSchedule(id: string): Promise<void> {
    return this.runtime.remove(id);
  }

  setSchedulePaused(id: string, paused: boolean): Promise<void> {
    return this.runtime.setPaused(id, paused);
  }

  triggerSchedule(id: string): Promise<TriggeredSchedule> {
    return this.runtime.trigger(id);
  }

  schedules(): ScheduleInfo[] {
    return this.scheduler.list();
  }
}

/** Checks every `@Cron` payload against its job's schema (createWarren, before connecting). */
export async function checkCronData(plan: TopologyPlan, declarations: SchedulingDeclarations): Promise<void> {
  for (const spec of declarations.crons)
    await checkScheduleData(`@Cron('${spec.id}')`, plan.jobs.get(spec.job)?.schema, spec.data);
}
