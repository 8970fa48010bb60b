import { checkOneOf, ConfigurationError, validationMessage, type MissedTickPolicy } from '../core';
import { CronPattern } from './cron-pattern';
import { MISSED_TICK_POLICIES, type ResolvedSchedulerOptions } from './options';

/** Options of `warren.cron.schedule(job, pattern, data, options)`. */
export interface ScheduleOptions {
  /** The schedule's id: part of every firing's job id, and what `unschedule` takes. Default: the job name. */
  readonly id?: string;
  /** IANA time zone the pattern is read in. Default: `scheduler.tz` (UTC). */
  readonly tz?: string;
  /** What a new leader does about ticks that fell while no process led. Default: `scheduler.missedTicks`. */
  readonly missedTicks?: MissedTickPolicy;
}

/**
 * Where a schedule came from: `@Cron` (decorator), `warren.cron.schedule()` in this process (runtime), or the
 * broker's schedule registry (`warren.cron.add()` in any process, or the CLI).
 */
export type ScheduleSource = 'decorator' | 'runtime' | 'registry';

/** A schedule as this process knows it (`warren.cron.list()`). */
export interface ScheduleInfo {
  readonly id: string;
  /** The job each firing publishes. */
  readonly job: string;
  readonly pattern: string;
  readonly tz: string;
  readonly data: unknown;
  readonly missedTicks: MissedTickPolicy;
  readonly source: ScheduleSource;
  /** Paused through the schedule registry: it does not fire until resumed. */
  readonly paused: boolean;
  /** The next tick after now, whichever process will fire it. */
  readonly nextFireAt: Date;
  /** The last tick this process fired while it led, if any. */
  readonly lastFiredAt: Date | undefined;
}

/** A validated schedule, before it is running. */
export interface ScheduleSpec {
  readonly id: string;
  readonly job: string;
  readonly cron: CronPattern;
  readonly data: unknown;
  readonly missedTicks: MissedTickPolicy;
  readonly source: ScheduleSource;
}

/** Room for `@<ISO time>` within the 255-character job id. */
const MAX_ID_LENGTH = 200;

/**
 * Validates one schedule, `at` naming it in messages (`@Cron('report.daily')`,
 * `schedule('report.daily')`): `@Cron('report.daily').tz must be an IANA time zone ... (got 'Mars/Base')`.
 */
export function resolveSchedule(
  at: string,
  input: {
    job: string;
    pattern: string;
    data: unknown;
    id?: string | undefined;
    tz?: string | undefined;
    missedTicks?: MissedTickPolicy | undefined;
    source: ScheduleSource;
  },
  defaults: Pick<ResolvedSchedulerOptions, 'tz' | 'missedTicks'>,
): ScheduleSpec {
  const id = input.id ?? input.job;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) {
    throw new ConfigurationError(
      validationMessage(`${at}.id`, `must be a string of 1 to ${MAX_ID_LENGTH} characters`, id),
    );
  }
  if (input.data !== undefined) {
    try {
      JSON.stringify(input.data);
    } catch (error) {
      throw new ConfigurationError(`${at}.data must be JSON-serialisable: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  return Object.freeze({
    id,
    job: input.job,
    cron: CronPattern.parse(`${at}.pattern`, input.pattern, input.tz ?? defaults.tz, `${at}.tz`, id),
    data: input.data ?? {},
    missedTicks: checkOneOf(
      `${at}.missedTicks`,
      input.missedTicks ?? defaults.missedTicks,
      MISSED_TICK_POLICIES,
    ),
    source: input.source,
  });
}

/**
 * The job id of one firing: schedule id + scheduled fire time in ISO form
 * (`report.daily@2025-01-01T00:00:00.000Z`). The same tick always gets the same id, whichever
 * process fires it, so that a double fire during a leader change is one job to an idempotent consumer.
 */
export function firingJobId(scheduleId: string, fireAt: number): string {
  return `${scheduleId}@${new Date(fireAt).toISOString()}`;
}
