export {
  Scheduler,
  type SchedulerDeps,
  type LeadershipSignal,
  type TickLedger,
  type SchedulerClock,
} from './scheduler';
export {
  resolveSchedulerOptions,
  SCHEDULER_DEFAULTS,
  MISSED_TICK_POLICIES,
  type SchedulerOptions,
  type ResolvedSchedulerOptions,
} from './options';
export {
  resolveSchedule,
  firingJobId,
  type ScheduleOptions,
  type ScheduleInfo,
  type ScheduleSpec,
  type ScheduleSource,
} from './schedule';
export { CronPattern, checkTimeZone } from './cron-pattern';
export {
  encodeScheduleRecord,
  decodeScheduleRecord,
  applyScheduleRecord,
  type ScheduleAction,
  type ScheduleDefinition,
  type ScheduleRecord,
  type RegistryEntry,
} from './schedule-record';
