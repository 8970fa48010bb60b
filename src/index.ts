/**
 * warren — background jobs on RabbitMQ. The public API: explicit named exports only.
 */
import 'reflect-metadata';

export {
  createWarren,
  Warren,
  type WarrenJobs,
  type JobMap,
  type HealthReport,
  type PublishManyEntry,
  type PublishManyResult,
} from './warren';
export type { WarrenOptions } from './warren';
export type { WarrenDeadLetterLogOptions } from './warren';
export type { HistoryOptions } from './history';
export type { RescheduleOptions } from './warren';
export type { RecordRole, RecordSkips, SigningKeyOption, SkipReason } from './records';
export { Job, readJobDefinition, type JobClass, type JobData } from './decorators';
export { Cron, type CronOptions } from './decorators';
export {
  SCHEDULER_DEFAULTS,
  firingJobId,
  type SchedulerOptions,
  type ScheduleOptions,
  type ScheduleInfo,
  type ScheduleSource,
  type AddScheduleOptions,
  type TriggeredSchedule,
} from './scheduler';
export { LIMITER_DEFAULTS } from './coordination';
/** For integrations (warren/nest) that tell @Job classes apart without validating them. */
export { readJobMetadata, type JobMetadata } from './decorators';
export { defineTopology, mergeTopologies } from './topology';
export type {
  TopologyDeclaration,
  ExchangeDeclaration,
  QueueDeclaration,
  BindingDeclaration,
  ExchangeType,
  QueueType,
  QueueOverflow,
  TopologyPlan,
  DelayOptions,
  TopologyOptions,
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
  UnrecoverableError,
  RetryLaterError,
  CompensationFailedError,
  JOB_DEFAULTS,
  MAX_DELAY_MS,
  validatePayload,
} from './core';
export type {
  WarrenErrorCode,
  JobOptions,
  JobDefinition,
  JobContext,
  JobHandler,
  BackoffOptions,
  BackoffFunction,
  PublishOptions,
  PublishedJob,
  BreakerHandle,
  WarrenEvents,
  JobEventBase,
  JobDefaults,
  Logger,
  StandardSchemaV1,
  PayloadCheck,
  PayloadIssue,
  RateLimitOptions,
  MissedTickPolicy,
  Instrumentation,
  InstrumentationTarget,
  PublishInfo,
  PublishOrigin,
  ProcessInfo,
  ProcessScope,
  ProcessOutcome,
  SlipEventBase,
} from './core';
export {
  branch,
  SlipBuilder,
  type SlipBranch,
  SLIP_MAX_BYTES,
  SLIP_MAX_RESULT_BYTES,
  SLIP_MAX_STEPS,
  type SlipActivity,
  type SlipEnvelope,
  type SlipFault,
  type SlipLogEntry,
  type SlipStep,
  type StartedSlip,
} from './workflow';
export { HEADERS, type DeadReason } from './message';
export type {
  BrokerFeatures,
  BrokerVersion,
  ConnectionOptions,
  ReconnectOptions,
  SocketOptions,
} from './connection';
export type { PublisherOptions, ResultHandle } from './publisher';
export type { WorkerOptions, ConsumerHealth, DeadLetter, ParkingReplayOptions } from './worker';
export {
  MemoryIdempotencyStore,
  PostgresIdempotencyStore,
  MemoryJoinStore,
  PostgresJoinStore,
  type JoinStore,
  type JoinArrival,
  type JoinFailure,
  type PostgresJoinStoreOptions,
  MemoryDedupStore,
  PostgresDedupStore,
  type DedupStore,
  type DedupRecord,
  type ReserveResult,
  type PostgresDedupStoreOptions,
  IdempotencyStoreError,
  IDEMPOTENCY_DEFAULTS,
  type IdempotencyStore,
  type ClaimResult,
  type IdempotencyOperation,
  type IdempotencyStoreOptions,
  type MemoryIdempotencyStoreOptions,
  type PostgresIdempotencyStoreOptions,
  type PgPool,
} from './idempotency';
export { WORKER_DEFAULTS } from './worker';
export {
  Outbox,
  OutboxError,
  OUTBOX_DEFAULTS,
  outboxTableSql,
  kyselyTransaction,
  knexTransaction,
  type KyselyExecutor,
  type KnexExecutor,
  type OutboxBacklog,
  type OutboxOperation,
  type OutboxOptions,
  type OutboxPool,
  type OutboxPublished,
  type OutboxPublishOptions,
  type OutboxRelayOptions,
  type OutboxTransaction,
  type PgPoolClient,
  type PgResult,
} from './outbox';
export type { BreakerOptions } from './breaker';
