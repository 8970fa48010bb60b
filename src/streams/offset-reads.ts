import type * as amqp from 'amqplib';
import { readLast } from './stream-ends';
import { readStream, type StreamRecord } from './stream-reader';

/**
 * The records of the stream's last chunk (delivered whole when a read starts at `last`) and its last offset
 * (undefined: an empty stream): what {@link lastOffset} finds, keeping the records, so a reader whose tail
 * lies in the last chunk need not read it again.
 */
export async function readLastChunk(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  idleMs: number,
): Promise<{ records: StreamRecord[]; end: number | undefined }> {
  const records: StreamRecord[] = [];
  await readLast(openChannel, stream, idleMs, (r) => {
    records.push(r);
  });
  return { records, end: records[records.length - 1]?.offset };
}

/** Offsets this close together are read in one run rather than one read each. */
const RUN_GAP = 16;
/** Reads in flight at once when reading scattered offsets. */
const OFFSET_READS = 32;

/**
 * Reads the records at the given offsets (any order, duplicates ignored): one read per run of nearby
 * offsets, several runs at once, so a thousand scattered records cost a thousand short reads in parallel,
 * not a read of everything between them. `visit` sees only the asked offsets (of each run, in order).
 */
export async function readOffsets(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  offsets: Iterable<number>,
  idleMs: number,
  visit: (record: StreamRecord) => void,
  /** Reads in flight at once. */
  parallel = OFFSET_READS,
): Promise<void> {
  const sorted = [...new Set(offsets)].sort((a, b) => a - b);
  const runs: { from: number; until: number; wanted: Set<number> }[] = [];
  for (const offset of sorted) {
    const last = runs[runs.length - 1];
    if (last && offset - last.until <= RUN_GAP) {
      last.until = offset;
      last.wanted.add(offset);
    } else runs.push({ from: offset, until: offset, wanted: new Set([offset]) });
  }
  let next = 0;
  const worker = async () => {
    while (next < runs.length) {
      const run = runs[next++]!;
      await readStream(
        openChannel,
        stream,
        run.from,
        {
          max: Number.POSITIVE_INFINITY,
          until: run.until,
          idleMs,
          // exactly the run: a history batch is tens of KB, and records past it would be sent for nothing
          prefetch: Math.min(2000, run.until - run.from + 1),
        },
        (r) => {
          if (run.wanted.has(r.offset)) visit(r);
        },
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, runs.length) }, worker));
}
