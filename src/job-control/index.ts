/**
 * Job control: cancel, promote and reschedule delayed jobs by id, through records on a stream every
 * process follows (README, "Cancel, promote, reschedule").
 */
export { JobControl, CONTROL_RETENTION_MS, type JobControlDeps } from './job-control';
export {
  judge,
  parseControlRecord,
  type ControlAction,
  type ControlRecord,
  type JobVerdict,
} from './control-record';
