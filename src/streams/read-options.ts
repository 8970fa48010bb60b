import type * as amqp from 'amqplib';

/** What a stream read takes and gives (stream-reader.ts): where it starts, when it ends, what it yields. */

/** One record read from a stream, with its offset. */
export interface StreamRecord {
  readonly offset: number;
  readonly content: Buffer;
  readonly properties: amqp.MessageProperties;
}

/**
 * Where a read starts: an offset, the first or the last chunk, or the first chunk written at or after a
 * time (ms; the broker keeps chunk times in seconds, so a read may start up to a second early).
 */
export type StreamStart = number | 'first' | 'last' | { readonly timestampMs: number };

/** The `x-stream-offset` argument of a start: a timestamp goes as AMQP type `T`, in seconds. */
export function offsetArgument(from: StreamStart): unknown {
  if (typeof from === 'object') return { '!': 'timestamp', value: Math.floor(from.timestampMs / 1000) };
  return from;
}

export interface ReadOptions {
  /** Stop after this many records. */
  readonly max: number;
  /**
   * Stop after the record at this offset (inclusive). A promise is an end still being found (see
   * readToEnd): until it settles the read goes on; undefined (an empty stream) ends it.
   */
  readonly until?: number | Promise<number | undefined>;
  /**
   * No record for this long after the last one means the end of the stream, ms. The first record may take
   * longer (the broker opens the segment and seeks): up to FIRST_RECORD_WAIT_FACTOR times this, at least
   * a second.
   */
  readonly idleMs: number;
  /** Records in flight (basic.qos): bigger scans faster, a page needs no more than it shows. */
  readonly prefetch: number;
  /** How long to wait for the first record, ms; default FIRST_RECORD_WAIT_FACTOR × idleMs, at least 1 s. */
  readonly firstWaitMs?: number;
  /**
   * The quiet of `idleMs` ends the read only once the broker answered a basic.qos sent after the consume:
   * it answers after every record it read for the consume, so a broker that pauses in the middle of a
   * chunk (a loaded one) does not cut the read short. What a read at `last` needs, whose quiet is 10 ms.
   */
  readonly quietAfterBarrier?: boolean;
}
