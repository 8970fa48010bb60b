/**
 * The job history: a lifecycle event log (a stream) written from the job path, read to answer "where is
 * job X?".
 */
export { HistoryWriter } from './history-writer';
export { findJob } from './find-job';
export {
  HistoryIndex,
  LOOKUP_INDEXES_ABOVE,
  type AppendRecord,
  type HistoryIndexDeps,
} from './history-index';
export { COMPACT_DELTAS, COMPACT_ENTRIES, parseIndexState, type IndexState } from './index-state';
export { HistoryIndexer, INDEX_AFTER_MS } from './history-indexer';
export { recentJobs, type RecentJob, type RecentJobs } from './recent-jobs';
export {
  firstLine,
  jobStatus,
  keptPayload,
  keptResult,
  type HistoryBatch,
  type HistoryEvent,
  type HistoryKind,
  type JobEvent,
  type JobState,
  type JobStatus,
} from './history-event';
export {
  HISTORY_DEFAULTS,
  MAX_HISTORY_VALUE_BYTES,
  resolveHistoryOptions,
  type HistoryOptions,
  type ResolvedHistoryOptions,
} from './options';
export { LiveHistory } from './live-history';
export { LookupServer } from './lookup-server';
export { askLookupServer, SERVED_LOOKUP_TIMEOUT_MS } from './served-lookup';
