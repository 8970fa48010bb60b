import type { ConfirmPublisher, ConnectionManager } from '../connection';
import { createSilentLogger } from '../core';
import {
  RuntimeSchedules,
  Scheduler,
  ScheduleRegistry,
  type AddScheduleOptions,
  type ResolvedSchedulerOptions,
  type ScheduleSpec,
  type TriggeredSchedule,
} from '../scheduler';
import type { RecordTrust } from '../records';
import { requireStream, type TopologyPlan } from '../topology';

/** What the schedule operations need from the ops connection (opened on first use). */
export interface ScheduleOpsConnection {
  readonly manager: ConnectionManager;
  readonly confirms: ConfirmPublisher;
  readonly publish: (job: string, data: unknown, jobId: string) => Promise<unknown>;
  readonly trust: RecordTrust;
}

/**
 * The schedule registry from the operations API and the CLI: the same validation and records as
 * `warren.cron.add` and its kin. The config's `@Cron` ids count as declared in code (refused for add
 * and remove, pausable, triggerable). Writes only; it never follows the registry, and trigger-now of a
 * registry schedule reads the registry to its end first.
 */
export class ScheduleOps {
  private runtime: Promise<RuntimeSchedules> | undefined;

  constructor(
    private readonly plan: TopologyPlan,
    private readonly crons: readonly ScheduleSpec[],
    private readonly defaults: ResolvedSchedulerOptions,
    private readonly publishTimeoutMs: number,
    private readonly connect: () => Promise<ScheduleOpsConnection>,
  ) {}

  async add(job: string, pattern: string, data: unknown, options?: AddScheduleOptions): Promise<void> {
    await (await this.open()).add(job, pattern, data, options);
  }

  async remove(id: string): Promise<void> {
    await (await this.open()).remove(id);
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    await (await this.open()).setPaused(id, paused);
  }

  async trigger(id: string): Promise<TriggeredSchedule> {
    return (await this.open()).trigger(id);
  }

  private open(): Promise<RuntimeSchedules> {
    this.runtime ??= this.connect().then(({ manager, confirms, publish, trust }) => {
      const log = createSilentLogger();
      const stream = requireStream(this.plan, 'schedules');
      const registry = new ScheduleRegistry({
        manager,
        confirms,
        stream: stream.name,
        assertion: stream.assertion,
        publishTimeoutMs: this.publishTimeoutMs,
        log,
        trust,
      });
      const never = { isLeader: false, onChange: () => () => undefined };
      const ledger = { read: async () => new Map(), write: async () => undefined };
      const scheduler = new Scheduler({ publish, leadership: never, ledger, log });
      const runtime = new RuntimeSchedules({
        scheduler,
        registry,
        defaults: this.defaults,
        plan: this.plan,
        isFollowing: false,
        loadTimeoutMs: Math.max(10_000, this.publishTimeoutMs),
        publish,
        log,
      });
      for (const spec of this.crons) runtime.addLocal(spec);
      return runtime;
    });
    return this.runtime;
  }
}
