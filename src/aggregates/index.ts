/**
 * Queue aggregates for the dashboard's graphs (docs/guide/aggregates.md): each worker process counts its
 * runs per job queue per bucket of time (an instrumentation on the job path), appends one signed record per
 * bucket and its hour and day roll-ups to three streams of the namespace, and readers add the records of
 * every process up by queue and bucket.
 */
export { BucketCollector, MAX_LISTED_RUNNING, type RunningJob } from './bucket-collector';
export { AggregateWriter, align } from './aggregate-writer';
export {
  decodeAggregate,
  encodeAggregate,
  MAX_RECORD_BYTES,
  type AggregateRecord,
  type QueueCounts,
} from './aggregate-record';
export {
  AggregateMerger,
  type AggregatePoint,
  type AggregateSeries,
  type Percentiles,
} from './aggregate-view';
export { binOf, binValue, DenseHistogram, MergedHistogram, MAX_BIN } from './latency-histogram';
export {
  decodeMark,
  encodeMark,
  MARK_KINDS,
  MAX_GRAPH_MARKS,
  MAX_NOTE_CHARS,
  MAX_RELEASE_CHARS,
  readMarks,
  type GraphMark,
  type MarkKind,
  type MarksRead,
} from './graph-marks';
export { readAggregates, type AggregateRead, type AggregateReadResult } from './read-aggregates';
export {
  AGGREGATE_LEVELS,
  AGGREGATES_DEFAULTS,
  levelMs,
  levelRetention,
  resolveAggregatesOptions,
  type AggregateLevel,
  type AggregatesOptions,
  type ResolvedAggregatesOptions,
} from './options';
