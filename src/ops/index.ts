/**
 * warren/ops: the operations API (queues, processes, pause and resume across processes, schedules,
 * publish, topology plan/diff/apply/verify). Explicit named exports only.
 */
export { createOps, WarrenOps } from './ops';
export type { RescheduleOptions } from '../warren';
export { WARREN_VERSION } from '../core';
export { UnknownQueueError, ManagementApiError } from './ops-errors';
export { redactCredentials } from './redact-credentials';
export { OPS_DEFAULTS, resolveOpsOptions, type OpsOptions, type ManagementOptions } from './options';
export { diffTopology, type TopologyDiff, type Drift, type DriftKind } from './topology-diff';
export { verifyTopology, type VerifyReport, type VerifyCheck } from './topology-verify';
export type { TopologyOps } from './topology-ops';
export { describePlan, mergeSchedules, type DeclaredSchedule } from './describe-plan';
/** The topology planner, for tooling: declarations and job definitions to the plan warren applies. */
export {
  planTopology,
  resolveTopologyOptions,
  type PlanInput,
  type TopologyPlan,
  type PlannedQueue,
  type PlannedExchange,
  type PlannedBinding,
  type PlannedJob,
} from '../topology';
export type {
  QueueOverview,
  PauseResult,
  ProcessesReport,
  ScheduleOverview,
  PlanEntry,
  ApplyResult,
} from './ops-results';
export type { BrokerState, BrokerQueue, BrokerExchange, BrokerBinding } from './management-api';
export type { ProcessStatus, ProcessQueueStatus, ProcessScheduleStatus } from '../process-control';
export { DeadLetterOps } from './dead-letter-ops';
export {
  DEAD_LETTER_LOG_DEFAULTS,
  REPLAY_DEFAULT_RATE,
  type DeadLetterLogOptions,
  type IndexedLetter,
  type LetterFilter,
  type LetterState,
  type LoggedLetter,
  type LogPage,
  type LogStats,
  type PurgeResult,
  type ReplayOptions,
  type ReplayResult,
  type ShownLetter,
} from '../dead-letter-log';
export type { JobStatus, JobEvent, JobState, HistoryKind, HistoryOptions } from '../history';
export { HISTORY_DEFAULTS } from '../history';
export type { AddScheduleOptions, TriggeredSchedule } from '../scheduler';
export { UnknownScheduleError } from '../core';
