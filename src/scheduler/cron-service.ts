import type { ConfirmPublisher, ConnectionManager } from '../connection';
import { ConfigurationError, type EmitEvent, type Logger } from '../core';
import type { RecordTrust } from '../records';
import { requireStream, type TopologyPlan } from '../topology';
import type { CronDeclarations } from './cron-declarations';
import { CronLeadership } from './cron-leadership';
import { RuntimeSchedules, type AddScheduleOptions, type TriggeredSchedule } from './runtime-schedules';
import type { ScheduleInfo, ScheduleOptions } from './schedule';
import { resolveRuntimeSchedule } from './schedule-data';
import { ScheduleRegistry } from './schedule-registry';
import { Scheduler, type LeadershipSignal } from './scheduler';
import { isSchedulerRunning, type AddedSchedule } from './scheduler-presence';
import type { TickLedger } from './term-ledger';

export interface CronServiceDeps {
  readonly plan: TopologyPlan;
  readonly declarations: CronDeclarations;
  readonly manager: ConnectionManager;
  readonly confirms: ConfirmPublisher;
  /** Publishes one cron firing with its deterministic job id. */
  readonly publish: (job: string, data: unknown, jobId: string) => Promise<unknown>;
  readonly publishTimeoutMs: number;
  readonly reapplyTopology: () => Promise<void>;
  readonly emit: EmitEvent;
  readonly log: Logger;
  /** Signs and checks the schedule registry's records. */
  readonly trust: RecordTrust;
}

/** The least time to read the schedule registry to its end, ms. */
const REGISTRY_LOAD_MIN_MS = 10_000;

const NEVER_LEADER: LeadershipSignal = { isLeader: false, onChange: () => () => undefined };
const NO_LEDGER: TickLedger = { read: async () => new Map(), write: async () => undefined };

/**
 * The cron part of a warren instance: the scheduler, fed by the cron leadership (when the scheduler is
 * enabled), the schedules declared in code and the broker's schedule registry.
 */
export class CronService {
  private readonly scheduler: Scheduler;
  private readonly leadership: CronLeadership | undefined;
  private readonly registry: ScheduleRegistry;
  private readonly runtime: RuntimeSchedules;
  private readonly registryLoadMs: number;
  private started = false;

  constructor(private readonly deps: CronServiceDeps) {
    const { plan, manager, declarations, log } = deps;
    if (declarations.scheduler.enabled) {
      this.leadership = new CronLeadership({
        manager,
        confirms: deps.confirms,
        leaderQueue: plan.naming.leaderQueue(),
        ledgerQueue: plan.naming.cronLedgerQueue(),
        publishTimeoutMs: deps.publishTimeoutMs,
        reapplyTopology: deps.reapplyTopology,
        log: log.child({ component: 'leader-election' }),
      });
      this.leadership.onChange((isLeader) => deps.emit('leadershipChanged', { isLeader }));
    }
    this.scheduler = new Scheduler({
      publish: deps.publish,
      leadership: this.leadership ?? NEVER_LEADER,
      ledger: this.leadership?.ledger ?? NO_LEDGER,
      log: log.child({ component: 'scheduler' }),
    });
    const isFollowing = declarations.scheduler.enabled;
    this.registryLoadMs = Math.max(REGISTRY_LOAD_MIN_MS, deps.publishTimeoutMs);
    const registry = requireStream(plan, 'schedules');
    this.registry = new ScheduleRegistry({
      manager,
      confirms: deps.confirms,
      stream: registry.name,
      assertion: registry.assertion,
      checkpoints: requireStream(plan, 'schedules-checkpoints'),
      publishTimeoutMs: deps.publishTimeoutMs,
      log: log.child({ component: 'schedule-registry' }),
      onChange: (id) => this.runtime.reconcile(id),
      trust: deps.trust,
    });
    this.runtime = new RuntimeSchedules({
      scheduler: this.scheduler,
      registry: this.registry,
      defaults: declarations.scheduler,
      plan,
      isFollowing,
      loadTimeoutMs: this.registryLoadMs,
      publish: deps.publish,
      isSchedulerRunning: () => isSchedulerRunning(() => manager.openChannel(), plan.naming.leaderQueue()),
      log: log.child({ component: 'scheduler' }),
    });
    for (const spec of declarations.crons) this.runtime.addLocal(spec);
  }

  get isLeader(): boolean {
    return this.leadership?.isLeader ?? false;
  }

  /** The connection's ready hook. */
  async open(generation: number): Promise<void> {
    // After a reconnect, catch up with the registry before rejoining the election: a schedule paused
    // meanwhile must not fire once more.
    if (this.started && this.deps.declarations.scheduler.enabled)
      await this.registry.load(this.registryLoadMs).catch(() => this.registry.open());
    await this.leadership?.open(generation);
  }

  /** Joins the election; from now on this process fires schedules while it leads. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    // The registry is read to its end first: a paused schedule never fires at start.
    if (this.deps.declarations.scheduler.enabled) await this.registry.load(this.registryLoadMs);
    this.scheduler.start();
    await this.leadership?.start();
  }

  /** Stops firing at once and hands the leader token on. */
  async stop(): Promise<void> {
    this.scheduler.stop();
    await Promise.all([this.leadership?.stop(), this.registry.close()]);
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
    const spec = await resolveRuntimeSchedule(at, this.deps.plan, this.deps.declarations.scheduler, {
      job,
      pattern,
      data,
      options,
      source: 'runtime',
    });
    return this.runtime.addLocal(spec);
  }

  unschedule(id: string): boolean {
    return this.runtime.removeLocal(id);
  }

  /**
   * Adds or replaces a schedule in the broker's registry (docs/guide/schedule-registry.md). A schedule fires
   * only where a process runs the scheduler: added from a process that does not, while no process of the
   * namespace takes part in the cron election, it is stored but fires nothing; the result says so
   * (`isFired: false` and a `warning`), and the warning is logged.
   */
  async addSchedule(
    job: string,
    pattern: string,
    data: unknown,
    options?: AddScheduleOptions,
  ): Promise<AddedSchedule> {
    const added = await this.runtime.add(job, pattern, data, options);
    if (added.warning !== undefined)
      this.deps.log.warn(
        { scheduleId: added.id, leaderQueue: this.deps.plan.naming.leaderQueue() },
        added.warning,
      );
    return added;
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
