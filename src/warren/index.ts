/**
 * The composition root: `createWarren` resolves the options (a pure step, `resolveWarrenConfig`), wires
 * the named parts and connects them; the Warren class is the face users hold. Nothing below imports this
 * folder; warren/ops reuses its option resolution and publishing wiring. `planOf` and `warrenParts` are
 * for internal users and tests: src/index.ts does not export them.
 */
export { createWarren } from './create-warren';
export { createEventSubscriber, type EventSubscriberOptions } from './create-event-subscriber';
export { Warren, planOf, warrenParts } from './warren';
export type { WarrenJobs, JobMap, PublishManyEntry, PublishManyResult } from './warren-jobs';
export type { HealthReport } from './health';
export { resolveWarrenConfig, resolveWarrenConnectionOptions, type WarrenConfig } from './config';
export { planWarrenTopology } from './plan-warren-topology';
export { resolveJobSettings, queueConcurrency, type JobSettings } from './job-settings';
export { wirePublishing, type PublishingParts, type PublishingExtras } from './publishing';
export type { WarrenParts } from './parts';
export { checkWarrenOptionKeys, resolveWarrenTopologyOptions, type WarrenOptions } from './options';
export type { WarrenDeadLetterLogOptions } from './dead-letter-log';
export { createJobControl, rescheduleAt, type RescheduleOptions } from './job-control';
export { historyIndex } from './history';
export {
  removeNamespace,
  REMOVE_NAMESPACE_DEFAULTS,
  type RemoveNamespaceOptions,
  type NamespaceRemovalResult,
  type NamespaceRemover,
} from './remove-namespace';
export type { CancelledJob } from '../job-control';
