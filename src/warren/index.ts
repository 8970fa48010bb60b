/**
 * The composition root: `createWarren` resolves the options (a pure step), wires the named parts and
 * connects them; the Warren class is the face users hold. Nothing below imports this folder; warren/ops
 * reuses its option resolution and publishing wiring.
 */
export {
  createWarren,
  Warren,
  type WarrenJobs,
  type JobMap,
  type HealthReport,
  type PublishManyEntry,
  type PublishManyResult,
} from './warren';
export { checkWarrenOptionKeys, resolveWarrenTopologyOptions, type WarrenOptions } from './options';
export type { WarrenDeadLetterLogOptions } from './dead-letter-log';
export { createJobControl, rescheduleAt, type RescheduleOptions } from './job-control';
