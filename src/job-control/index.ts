/**
 * Job control: cancel, promote and reschedule delayed jobs by id, through records on a stream every
 * process follows (docs/guide/job-control.md).
 */
export { JobControl, type JobControlDeps, type DelayedJob } from './job-control';
export type { CancelledJob } from './cancelled-job';
export { CONTROL_RETENTION_MS, JOB_CONTROL_RETENTION, READ_AHEAD_SETTLE_MS } from './control-stream';
export {
  judge,
  inBurst,
  placeRecord,
  judgeDebounced,
  parseControlRecord,
  type ControlAction,
  type ControlRecord,
  type JobVerdict,
} from './control-record';
