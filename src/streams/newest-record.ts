import type * as amqp from 'amqplib';
import { readStream, type StreamRecord } from './stream-reader';

/** Nothing this long after a read at `last` starts: the stream is empty, ms. */
const NEWEST_FIRST_WAIT_MS = 100;
/** The last chunk comes in one burst: this quiet after a record ends it, ms. */
const NEWEST_QUIET_MS = 10;
/** A flood appended meanwhile ends the read after this many records. */
const NEWEST_MAX_RECORDS = 1000;

/**
 * The newest record of a stream's last chunk that `take` takes (a checkpoint): reads from `last` and keeps
 * the last one taken. An empty stream costs NEWEST_FIRST_WAIT_MS. Only a hint: a reader that gets undefined
 * (nothing taken, or the broker slow to deliver) reads the stream it is about from the start, never less.
 */
export async function newestRecord<T>(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  take: (record: StreamRecord) => T | undefined,
  /**
   * Stop at the first record taken instead of waiting out the chunk: for a reader to whom any recent
   * record will do (a lookup through the history's index checks what a checkpoint says), one quiet less.
   */
  firstTaken = false,
  /** How long to wait for the first record before taking the stream for empty, ms. */
  firstWaitMs = NEWEST_FIRST_WAIT_MS,
): Promise<T | undefined> {
  let newest: T | undefined;
  await readStream(
    openChannel,
    stream,
    'last',
    {
      max: NEWEST_MAX_RECORDS,
      idleMs: NEWEST_QUIET_MS,
      firstWaitMs,
      // one at a time when the first taken ends the read: nothing sent past it (the last chunk is small)
      prefetch: firstTaken ? 1 : 100,
    },
    (record) => {
      const taken = take(record);
      if (taken !== undefined) newest = taken;
      return !(firstTaken && taken !== undefined);
    },
  );
  return newest;
}
