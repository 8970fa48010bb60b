export { Worker, type WorkerDeps, type ConsumerHealth } from './worker';
export {
  resolveWorkerOptions,
  WORKER_DEFAULTS,
  type WorkerOptions,
  type ResolvedWorkerOptions,
} from './options';
export type { RegisteredJob } from './registered-job';
export type { KeyLimitOverride } from './key-limits';
export { resolveIsolateSettings, ISOLATE_DEFAULTS, type IsolateSettings } from './isolate-settings';
export { DeadLetters, type DeadLetter, type ParkingReplayOptions } from './dead-letters';
export {
  resolveBatchSettings,
  checkBatchPrefetch,
  checkBatchQueue,
  BATCH_DEFAULTS,
  type BatchSettings,
} from './batch-settings';
