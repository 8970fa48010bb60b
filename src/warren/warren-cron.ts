import { ShutdownError } from '../core';
import type { JobRef, JobData } from '../decorators';
import type {
  AddedSchedule,
  AddScheduleOptions,
  CronService,
  ScheduleInfo,
  ScheduleOptions,
  TriggeredSchedule,
} from '../scheduler';
import { jobNameOf, type JobName, type JobPayload, type WarrenJobs } from './warren-jobs';

/**
 * `warren.cron`: the cron schedules of a warren instance (docs/guide/cron.md). Two kinds: `schedule` keeps
 * one in this process (like `@Cron`); `add` keeps one in the broker's schedule registry, for every
 * process and every restart. Either is fired once per tick across all processes, by the cron leader.
 */
export class WarrenCron<TJobs extends object = WarrenJobs> {
  /** Made by the Warren; reach it as `warren.cron`. */
  constructor(
    private readonly scheduling: CronService,
    private readonly isClosing: () => boolean,
  ) {}

  /**
   * Publishes `job` with `data` on a cron pattern (5 fields, or 6 with seconds first), once per tick
   * across every process: whichever process leads fires it. The schedule lives in this process; to
   * keep it through restarts and leader changes, every process declares the same schedules at
   * startup (docs/guide/cron.md), or use {@link WarrenCron.add} to keep it on the broker. Replaces a
   * schedule of the same id (default: the job name).
   *
   * @example
   * await warren.cron.schedule('report.daily', '0 9 * * *', { kind: 'daily' }, { tz: 'Asia/Tokyo' });
   */
  schedule<K extends JobName<TJobs>>(
    job: K,
    pattern: string,
    data?: JobPayload<TJobs, K>,
    options?: ScheduleOptions,
  ): Promise<ScheduleInfo>;
  schedule<C extends JobRef>(
    job: C,
    pattern: string,
    data?: JobData<C>,
    options?: ScheduleOptions,
  ): Promise<ScheduleInfo>;
  schedule(
    job: string | JobRef,
    pattern: string,
    data?: unknown,
    options?: ScheduleOptions,
  ): Promise<ScheduleInfo> {
    if (this.isClosing()) return Promise.reject(new ShutdownError('warren is closed; schedule refused'));
    return this.scheduling.schedule(jobNameOf(job), pattern, data, options);
  }

  /**
   * Removes a schedule (declared by `schedule` or `@Cron`) from this process. False when there was none
   * with that id.
   */
  unschedule(id: string): boolean {
    return this.scheduling.unschedule(id);
  }

  /** The schedules this process knows, with their next tick. */
  list(): ScheduleInfo[] {
    return this.scheduling.schedules();
  }

  /**
   * Adds (or replaces) a schedule in the broker's schedule registry: every process that schedules sees
   * it, the leader fires it, and it outlives this process and every leader change (docs/guide/cron.md).
   * Validated here first (pattern, time zone, job, data); an id declared in code (`@Cron`,
   * `schedule()`) is refused. Resolves on the broker's confirm with whether a process fires it: stored
   * while no process runs the scheduler, it fires nothing until one does, and the result carries a
   * `warning` (also logged).
   *
   * @example
   * const { warning } = await warren.cron.add('report.send', '0 9 * * 1-5', { kind: 'weekday' }, { id: 'report.weekday' });
   * if (warning) console.warn(warning);
   */
  add<K extends JobName<TJobs>>(
    job: K,
    pattern: string,
    data?: JobPayload<TJobs, K>,
    options?: AddScheduleOptions,
  ): Promise<AddedSchedule>;
  add<C extends JobRef>(
    job: C,
    pattern: string,
    data?: JobData<C>,
    options?: AddScheduleOptions,
  ): Promise<AddedSchedule>;
  add(
    job: string | JobRef,
    pattern: string,
    data?: unknown,
    options?: AddScheduleOptions,
  ): Promise<AddedSchedule> {
    return this.scheduling.addSchedule(jobNameOf(job), pattern, data, options);
  }

  /** Removes a schedule from the broker's registry (code-declared ids are refused: pause them). */
  remove(id: string): Promise<void> {
    return this.scheduling.removeSchedule(id);
  }

  /** Pauses a schedule, registry or code-declared, in every process until resumed; kept on the broker. */
  pause(id: string): Promise<void> {
    return this.scheduling.setSchedulePaused(id, true);
  }

  /** Undoes `pause`: the schedule fires again from its next tick. */
  resume(id: string): Promise<void> {
    return this.scheduling.setSchedulePaused(id, false);
  }

  /** Publishes one firing of a schedule now, from this process (no leader needed): `<id>@manual-<ms>`. */
  trigger(id: string): Promise<TriggeredSchedule> {
    return this.scheduling.triggerSchedule(id);
  }

  /** Whether this process is the cron leader now (see the `leadershipChanged` event). */
  get isLeader(): boolean {
    return this.scheduling.isLeader;
  }
}
