/**
 * warren/ops: the operations API (queues, processes, pause and resume across processes, schedules,
 * publish, topology plan/diff/apply/verify, the dead-letter log, the job history). Explicit named exports
 * only, each from this entry alone: what a job author also needs (errors, schedule and reschedule types)
 * is in the root entry `warren`. The parts of a result (a plan's queues, a diff's drift kinds, a
 * process's queue rows) are read from the result types, not exported one by one.
 */
export { createOps, WarrenOps } from './ops';
export { WARREN_VERSION } from '../core';
export { UnknownQueueError, ManagementApiError } from './ops-errors';
export { redactCredentials } from './redact-credentials';
export type { OpsOptions } from './options';
export { diffTopology, type TopologyDiff, type Drift } from './topology-diff';
export { verifyTopology, type VerifyReport } from './topology-verify';
export type { TopologyOps } from './topology-ops';
export { describePlan } from './describe-plan';
/** The topology planner, for tooling: declarations and job definitions to the plan warren applies. */
export { planTopology, resolveTopologyOptions, type PlanInput, type TopologyPlan } from '../topology';
export type {
  QueueOverview,
  PauseResult,
  ProcessesReport,
  ScheduleOverview,
  ScheduleNotFiredReason,
  PlanEntry,
  ApplyResult,
} from './ops-results';
export type { BrokerState } from './management-api';
export type { ProcessStatus } from '../process-control';
export { DeadLetterOps } from './dead-letter-ops';
export type {
  IndexedLetter,
  LetterFilter,
  LetterState,
  LoggedLetter,
  LogPage,
  LogStats,
  PurgeResult,
  ReplayOptions,
  ReplayResult,
  ShownLetter,
} from '../dead-letter-log';
export type { JobStatus, JobEvent, JobState, HistoryKind } from '../history';
export type { AggregatesView, GraphRange } from './aggregate-ops';
