/**
 * Reading RabbitMQ streams over AMQP: a page or everything up to the end (`readStream`, `readToEnd`,
 * `lastOffset`), or following new records as they come (`followStream`). Used by the dead-letter log,
 * the job history, job control and the schedule registry, each of which keeps its records in a stream; and
 * the checkpoints a reader starts from instead of the first record (`CheckpointKeeper`).
 */
export { followStream, type StreamFollower } from './stream-follower';
export { newestRecord } from './newest-record';
export { rejectWhenStalled } from './stall-timer';
export {
  CHECKPOINT_EVERY_RECORDS,
  CHECKPOINT_MIN_INTERVAL_MS,
  CheckpointKeeper,
  watchForStaleCheckpoint,
  type CheckpointKeeperDeps,
} from './stream-checkpoints';
export { readStream, type StreamRecord, type StreamStart, type ReadOptions } from './stream-reader';
export { readToEnd, lastOffset, firstOffset, LAST_CHUNK_PREFETCH } from './stream-ends';
export { appendAndLocate } from './located-append';
export { readLastChunk, readOffsets } from './offset-reads';
export { consumeNoWait } from './nowait-consume';
export { openReadChannel } from './read-channel';
export { ReadChannels } from './read-channels';
export {
  decodeBlock,
  decodeEntries,
  encodeBlock,
  MAX_INDEX_SHARDS,
  IndexBuilder,
  keyHash,
  uncovered,
  type IndexBlock,
} from './offset-index';
export { indexGaps, lookUpIndex, streamBounds, type IndexedStream, type IndexLookup } from './indexed-read';
