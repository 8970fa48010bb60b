// Reads defined by a stream's ends: its first and last offsets, its last chunk, and a read to its end.
import type * as amqp from 'amqplib';
import { readStream, type ReadOptions, type StreamRecord, type StreamStart } from './stream-reader';

/**
 * The last chunk comes in one burst once a read at `last` starts (a few ms): this long without a record
 * after it means the burst is over. The end of a stream is never announced over AMQP 0-9-1; before issue 33
 * every lookup waited the read's whole idle time (200 ms) here.
 */
const LAST_CHUNK_QUIET_MS = 10;
/** Records in flight when reading a stream's last chunk: all of it at once. */
export const LAST_CHUNK_PREFETCH = 1000;
/** No record for this long after a read at `last` starts means the stream is empty. */
const LAST_CHUNK_FIRST_WAIT_MS = 500;
/** A gap this long in the middle of a read with a known end means the records are gone (retention). */
const KNOWN_END_IDLE_MS = 5000;

/**
 * Reads from `from` to the stream's end as it was when the read began: finds the last offset (the last
 * chunk, delivered whole) while it reads, and stops there. Unlike a read that stops at the first quiet
 * `idleMs`, a pause of a loaded broker mid-read does not cut it short; and since the end is found beside
 * the read rather than before it, a short stream is read in the time of two round trips and quiets of
 * LAST_CHUNK_QUIET_MS, not of `idleMs` (the end's read is fenced by a basic.qos round trip, so a broker that
 * pauses mid-way through sending the last chunk does not give an earlier end: a read that stopped there
 * would miss the stream's newest records, a schedule of the registry, a limit override).
 */
export async function readToEnd(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  from: StreamStart,
  options: Omit<ReadOptions, 'max' | 'until'>,
  visit: (record: StreamRecord) => void,
): Promise<{ count: number; lastOffset: number | undefined }> {
  const end = lastOffset(openChannel, stream, options.idleMs);
  // The read's own failure is the one to report; the end's is reported through `until`.
  end.catch(() => undefined);
  const read = await readStream(
    openChannel,
    stream,
    from,
    {
      ...options,
      max: Number.POSITIVE_INFINITY,
      until: end,
      idleMs: Math.max(options.idleMs, KNOWN_END_IDLE_MS),
    },
    visit,
  );
  await end;
  return read;
}

/** The offset of the stream's last record, or undefined when it is empty. */
export async function lastOffset(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  idleMs: number,
): Promise<number | undefined> {
  let end: number | undefined;
  await readLast(openChannel, stream, idleMs, (r) => {
    end = r.offset;
  });
  return end;
}

/**
 * Reads the stream's last chunk (delivered whole when a read starts at `last`) to `visit`: it ends
 * LAST_CHUNK_QUIET_MS after the burst, or LAST_CHUNK_FIRST_WAIT_MS (at least) after the start when the stream
 * is empty.
 */
export async function readLast(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  idleMs: number,
  visit: (record: StreamRecord) => void,
): Promise<void> {
  await readStream(
    openChannel,
    stream,
    'last',
    {
      max: Number.POSITIVE_INFINITY,
      idleMs: Math.min(idleMs, LAST_CHUNK_QUIET_MS),
      firstWaitMs: Math.max(idleMs, LAST_CHUNK_FIRST_WAIT_MS),
      prefetch: LAST_CHUNK_PREFETCH,
      quietAfterBarrier: true,
    },
    visit,
  );
}

/** The offset of the stream's first kept record, or undefined when it is empty. */
export async function firstOffset(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  idleMs: number,
): Promise<number | undefined> {
  let first: number | undefined;
  await readStream(
    openChannel,
    stream,
    'first',
    { max: 1, idleMs, firstWaitMs: Math.max(idleMs, LAST_CHUNK_FIRST_WAIT_MS), prefetch: 1 },
    (r) => {
      first = r.offset;
    },
  );
  return first;
}
