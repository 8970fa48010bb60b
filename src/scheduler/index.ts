export { Scheduler, type SchedulerDeps, type LeadershipSignal, type SchedulerClock } from './scheduler';
export type { TickLedger } from './term-ledger';
export { CronService, type CronServiceDeps } from './cron-service';
export { readCronDeclarations, checkCronData, type CronDeclarations } from './cron-declarations';
export {
  RuntimeSchedules,
  type RuntimeSchedulesDeps,
  type AddScheduleOptions,
  type TriggeredSchedule,
} from './runtime-schedules';
export { ScheduleRegistry, type ScheduleRegistryDeps } from './schedule-registry';
export { isSchedulerRunning, noSchedulerWarning, type AddedSchedule } from './scheduler-presence';
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
