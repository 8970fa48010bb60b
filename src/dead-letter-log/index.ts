/**
 * The dead-letter log: a stream holding every dead letter, fed from the parking queues, browsed by offset,
 * searched through an in-process index, replayed and purged by appended markers.
 */
export {
  DeadLetterLog,
  type DeadLetterLogDeps,
  type LogPage,
  type PurgeResult,
  type LogStats,
  type ShownLetter,
} from './dead-letter-log';
export { DeadLetterCollector, type ParkingQueue } from './dead-letter-collector';
export { DeadLetterIndex, type IndexedLetter, type IndexStats } from './dead-letter-index';
export type { LetterFilter, LetterState } from './letter-filter';
export type { LetterDetail, LoggedLetter, Marker, MarkerAction } from './log-record';
export { REPLAY_DEFAULT_RATE, type ReplayOptions, type ReplayResult } from './replay-letters';
export {
  DEAD_LETTER_LOG_DEFAULTS,
  resolveDeadLetterLogOptions,
  type DeadLetterLogOptions,
  type ResolvedDeadLetterLogOptions,
} from './options';
