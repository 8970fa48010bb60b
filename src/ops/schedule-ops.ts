import type { ConfirmPublisher, ConnectionManager } from '../connection';
import { createSilentLogger } from '../core';
import {
  CronPattern,
  isSchedulerRunning,
  RuntimeSchedules,
  Scheduler,
  ScheduleRegistry,
  type AddedSchedule,
  type AddScheduleOptions,
  type ResolvedSchedulerOptions,
  type ScheduleSpec,
  type TriggeredSchedule,
} from '../scheduler';
import type { RecordTrust } from '../records';
import { requireStream, type TopologyPlan } from '../topology';
import type { DeclaredSchedule, RegistryView } from './describe-plan';
import type { ReadAgain } from './ops-connection';

/** What the schedule operations need from the ops connection (opened on first use). */
export interface ScheduleOpsConnection {
  readonly manager: ConnectionManager;
  readonly confirms: ConfirmPublisher;
  readonly publish: (job: string, data: unknown, jobId: string) => Promise<unknown>;
  readonly trust: RecordTrust;
  readonly read: ReadAgain;
}

/** Quiet time after the registry's last chunk that ends a read of it, ms. */
const REGISTRY_END_IDLE_MS = 200;

interface Parts {
  readonly read: ReadAgain;
  readonly runtime: RuntimeSchedules;
  readonly registry: ScheduleRegistry;
  readonly isSchedulerRunning: () => Promise<boolean>;
}

/**
 * The schedule registry from the operations API and the CLI: the same validation and records as
 * `warren.cron.add` and its kin. The config's `@Cron` ids count as declared in code (refused for add
 * and remove, pausable, triggerable). It never follows the registry: trigger-now of a registry schedule
 * reads the registry to its end first, and `read()` reads it once for `ops.schedules()`.
 */
export class ScheduleOps {
  private parts: Promise<Parts> | undefined;

  constructor(
    private readonly plan: TopologyPlan,
    private readonly crons: readonly ScheduleSpec[],
    private readonly defaults: ResolvedSchedulerOptions,
    private readonly publishTimeoutMs: number,
    private readonly connect: () => Promise<ScheduleOpsConnection>,
  ) {}

  /** Stores the schedule; the result says whether a process fires it (ops never runs a scheduler). */
  async add(
    job: string,
    pattern: string,
    data: unknown,
    options?: AddScheduleOptions,
  ): Promise<AddedSchedule> {
    return (await this.open()).runtime.add(job, pattern, data, options);
  }

  async remove(id: string): Promise<void> {
    await (await this.open()).runtime.remove(id);
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    await (await this.open()).runtime.setPaused(id, paused);
  }

  async trigger(id: string): Promise<TriggeredSchedule> {
    return (await this.open()).runtime.trigger(id);
  }

  /**
   * The registry as it is now (its schedules with their next tick, every paused id) and whether a
   * process runs the scheduler. A definition no process could run (an invalid pattern or zone, which
   * only a foreign writer can store) is left out, as every process leaves it out.
   */
  async read(): Promise<RegistryView> {
    const parts = await this.open();
    const [entries, running] = await parts.read(() =>
      Promise.all([parts.registry.snapshot(REGISTRY_END_IDLE_MS), parts.isSchedulerRunning()]),
    );
    const now = Date.now();
    const schedules: DeclaredSchedule[] = [];
    const paused = new Set<string>();
    for (const [id, entry] of entries) {
      if (entry.paused) paused.add(id);
      const definition = entry.definition;
      if (definition === undefined) continue;
      try {
        const at = `schedule registry '${id}'`;
        const tz = definition.tz ?? this.defaults.tz;
        const cron = CronPattern.parse(`${at}.pattern`, definition.pattern, tz, `${at}.tz`, id);
        schedules.push({
          id,
          job: definition.job,
          pattern: cron.pattern,
          tz: cron.tz,
          nextFireAt: new Date(cron.nextAfter(now)),
        });
      } catch {
        // skipped by every process too (logged there)
      }
    }
    return { schedules, paused, isSchedulerRunning: running };
  }

  private open(): Promise<Parts> {
    this.parts ??= this.connect().then(({ manager, confirms, publish, trust, read }) => {
      const log = createSilentLogger();
      const stream = requireStream(this.plan, 'schedules');
      const registry = new ScheduleRegistry({
        manager,
        confirms,
        stream: stream.name,
        assertion: stream.assertion,
        checkpoints: requireStream(this.plan, 'schedules-checkpoints'),
        publishTimeoutMs: this.publishTimeoutMs,
        log,
        trust,
      });
      const never = { isLeader: false, onChange: () => () => undefined };
      const ledger = { read: async () => new Map(), write: async () => undefined };
      const scheduler = new Scheduler({ publish, leadership: never, ledger, log });
      const running = () => isSchedulerRunning(() => manager.openChannel(), this.plan.naming.leaderQueue());
      const runtime = new RuntimeSchedules({
        scheduler,
        registry,
        defaults: this.defaults,
        plan: this.plan,
        isFollowing: false,
        loadTimeoutMs: Math.max(10_000, this.publishTimeoutMs),
        publish,
        isSchedulerRunning: running,
        log,
      });
      for (const spec of this.crons) runtime.addLocal(spec);
      return { read, runtime, registry, isSchedulerRunning: running };
    });
    return this.parts;
  }
}
