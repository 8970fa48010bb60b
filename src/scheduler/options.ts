import {
  checkKnownKeys,
  checkOneOf,
  ConfigurationError,
  validationMessage,
  type MissedTickPolicy,
} from '../core';
import { checkTimeZone } from './cron-pattern';

export interface SchedulerOptions {
  /**
   * Whether this process takes part in the cron leader election after `start()` and fires
   * schedules while it leads. Default: true when any job class given to `createWarren` carries
   * `@Cron`, else false. Set it to true to use `warren.cron.schedule()` without `@Cron` classes, or to
   * false for processes that run handlers but must never fire ticks.
   */
  readonly enabled?: boolean;
  /** IANA time zone of schedules that name none. Default 'UTC', so that hosts in different zones agree. */
  readonly tz?: string;
  /**
   * What a newly elected leader does about ticks that fell while no process led, for schedules that
   * do not choose: 'skip' (default) or 'run-once' (fire the latest missed tick once). docs/guide/cron.md.
   */
  readonly missedTicks?: MissedTickPolicy;
}

export interface ResolvedSchedulerOptions {
  readonly enabled: boolean;
  readonly tz: string;
  readonly missedTicks: MissedTickPolicy;
}

export const MISSED_TICK_POLICIES: readonly MissedTickPolicy[] = Object.freeze(['skip', 'run-once'] as const);

export const SCHEDULER_DEFAULTS = Object.freeze({ tz: 'UTC', missedTicks: 'skip' as MissedTickPolicy });

/** `hasCronJobs`: whether any job class carries @Cron (the default of `enabled`). */
export function resolveSchedulerOptions(
  input: SchedulerOptions = {},
  hasCronJobs = false,
): ResolvedSchedulerOptions {
  checkKnownKeys('scheduler', input, { enabled: true, tz: true, missedTicks: true } as const satisfies Record<
    keyof SchedulerOptions,
    true
  >);
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean')
    throw new ConfigurationError(validationMessage('scheduler.enabled', 'must be a boolean', input.enabled));
  return Object.freeze({
    enabled: input.enabled ?? hasCronJobs,
    tz: checkTimeZone('scheduler.tz', input.tz ?? SCHEDULER_DEFAULTS.tz),
    missedTicks: checkOneOf(
      'scheduler.missedTicks',
      input.missedTicks ?? SCHEDULER_DEFAULTS.missedTicks,
      MISSED_TICK_POLICIES,
    ),
  });
}
