import { EventEmitter } from 'node:events';
import { ShutdownError, type Logger, type WarrenEvents } from '../core';
import { readJobDefinition, type JobClass, type JobData } from '../decorators';
import type {
  AddScheduleOptions,
  CronService,
  ScheduleInfo,
  ScheduleOptions,
  TriggeredSchedule,
} from '../scheduler';
import type { JobName, JobPayload, WarrenJobs } from './warren-jobs';

/**
 * The event emitter and the cron schedules of a warren instance: the half of {@link Warren} that
 * speaks to its scheduling. Not created on its own.
 */
export abstract class ScheduledWarren<TJobs extends object = WarrenJobs> extends EventEmitter<WarrenEvents> {
  readonly #scheduling: CronService;
  #closing: Promise<void> | undefined;

  protected constructor(scheduling: CronService, log: Logger) {
    // An async listener's rejection comes to the method below instead of crashing the process.
    super({ captureRejections: true });
    this.#scheduling = scheduling;
    // An async listener that rejects is logged and ignored, like one that throws: a listener's bug must
    // not crash the worker (and since `failed` fires before the dead letter is confirmed, the job would
    // come back and crash the next process too).
    const onRejection = (error: unknown, event: string | symbol) =>
      log.error({ err: error, event: String(event) }, 'an event listener rejected; ignored');
    Object.defineProperty(this, EventEmitter.captureRejectionSymbol, { value: onRejection });
  }

  /** Whether `close()` was called. */
  protected get isClosing(): boolean {
    return this.#closing !== undefined;
  }

  /** Runs `shutdown` on the first call; every call returns its promise. */
  protected closeOnce(shutdown: () => Promise<void>): Promise<void> {
    this.#closing ??= shutdown();
    return this.#closing;
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
    if (this.isClosing) return Promise.reject(new ShutdownError('warren is closed; schedule refused'));
    const name = typeof job === 'string' ? job : readJobDefinition(job).name;
    return this.#scheduling.schedule(name, pattern, data, options);
  }

  /**
   * Removes a schedule (declared by `schedule` or `@Cron`) from this process. False when there was none with
   * that id.
   */
  unschedule(id: string): boolean {
    return this.#scheduling.unschedule(id);
  }

  /** The schedules this process knows, with their next tick. */
  schedules(): ScheduleInfo[] {
    return this.#scheduling.schedules();
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
    return this.#scheduling.addSchedule(name, pattern, data, options);
  }

  /** Removes a schedule from the broker's registry (code-declared ids are refused: pause them). */
  removeSchedule(id: string): Promise<void> {
    return this.#scheduling.removeSchedule(id);
  }

  /** Pauses a schedule, registry or code-declared, in every process until resumed; kept on the broker. */
  pauseSchedule(id: string): Promise<void> {
    return this.#scheduling.setSchedulePaused(id, true);
  }

  resumeSchedule(id: string): Promise<void> {
    return this.#scheduling.setSchedulePaused(id, false);
  }

  /** Publishes one firing of a schedule now, from this process (no leader needed): `<id>@manual-<ms>`. */
  triggerSchedule(id: string): Promise<TriggeredSchedule> {
    return this.#scheduling.triggerSchedule(id);
  }

  /** Whether this process is the cron leader now (see the `leadershipChanged` event). */
  get isLeader(): boolean {
    return this.#scheduling.isLeader;
  }
}
