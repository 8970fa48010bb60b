/**
 * warren — background jobs on RabbitMQ. The public API: explicit named exports only, each from one entry.
 *
 * This root entry holds what a job author and a publisher need: createWarren and the Warren instance, the
 * decorators and their function form (defineJob), topology as code, the errors, the job and publish
 * types, slips, the stores and the outbox.
 * Operator types are in `warren/ops`, instrumentation and metrics in `warren/observability`. The nested
 * option types (`WarrenOptions['worker']`, `['connection']`, ...) are read from WarrenOptions; they are
 * not exported one by one. The list is test/unit/public-api.txt, its limits test/unit/public-api.test.ts.
 */
import 'reflect-metadata';

export {
  createWarren,
  Warren,
  type WarrenOptions,
  type WarrenJobs,
  type HealthReport,
  type PublishManyResult,
  type RescheduleOptions,
  type RemoveNamespaceOptions,
  type NamespaceRemovalResult,
  type CancelledJob,
  createEventSubscriber,
} from './warren';
/** Live job events: `warren.events.subscribe` and createEventSubscriber (docs/guide/events.md). */
export { JobEventSubscription, type LiveJobEvent, type SubscriptionMessage } from './job-events';
export {
  Job,
  Cron,
  defineJob,
  readJobDefinition,
  /** For integrations (warren/nest) that tell @Job classes apart without validating them. */
  readJobMetadata,
  type JobClass,
  type JobData,
  type CronOptions,
  type DefinedJob,
  type DefineJobOptions,
} from './decorators';
export type {
  ScheduleOptions,
  ScheduleInfo,
  AddScheduleOptions,
  AddedSchedule,
  TriggeredSchedule,
} from './scheduler';
export {
  defineTopology,
  mergeTopologies,
  type TopologyDeclaration,
  type ExchangeDeclaration,
  type QueueDeclaration,
} from './topology';
export {
  WarrenError,
  ConfigurationError,
  TopologyError,
  TopologyConflictError,
  ConnectionError,
  PublishError,
  PayloadValidationError,
  DecodeError,
  UnknownJobError,
  UnknownScheduleError,
  JobTimeoutError,
  CircuitOpenError,
  ShutdownError,
  JobResultError,
  JobControlError,
  NamespaceInUseError,
  IsolateError,
  UnrecoverableError,
  RetryLaterError,
  CompensationFailedError,
  JOB_DEFAULTS,
  MAX_DELAY_MS,
  validatePayload,
  type WarrenErrorCode,
  type JobOptions,
  type JobDefinition,
  type JobContext,
  type JobHandler,
  type BackoffOptions,
  type PublishOptions,
  type PublishedJob,
  type BreakerHandle,
  type WarrenEvents,
  type Logger,
} from './core';
export {
  branch,
  SlipBuilder,
  type SlipActivity,
  type SlipLogEntry,
  type StartedSlip,
} from './workflow';
export { HEADERS, type DeadReason } from './message';
export type { ResultHandle } from './publisher';
export { WORKER_DEFAULTS, type DeadLetter, type ParkingReplayOptions } from './worker';
export {
  MemoryIdempotencyStore,
  PostgresIdempotencyStore,
  MemoryJoinStore,
  PostgresJoinStore,
  MemoryDedupStore,
  PostgresDedupStore,
  IdempotencyStoreError,
  type IdempotencyStore,
  type ClaimResult,
  type JoinStore,
  type JoinArrival,
  type JoinFailure,
  type DedupStore,
  type DedupRecord,
  type ReserveResult,
} from './idempotency';
export {
  Outbox,
  OutboxError,
  outboxTableSql,
  kyselyTransaction,
  knexTransaction,
  type OutboxTransaction,
} from './outbox';
