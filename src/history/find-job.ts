import type * as amqp from 'amqplib';
import type { RecordReader } from '../records';
import {
  indexGaps,
  keyHash,
  lookUpIndex,
  readOffsets,
  readStream,
  readToEnd,
  streamBounds,
  type IndexBuilder,
  type IndexedStream,
  type StreamRecord,
} from '../streams';
import {
  hasValidContents,
  jobStatus,
  keptContents,
  type HistoryEvent,
  type HistoryBatch,
  type HistoryKind,
  type JobEvent,
  type JobStatus,
} from './history-event';
import { parseJsonObject } from '../core';

/** A history batch larger than this is not parsed (a writer's batches are far below it). */
const MAX_BATCH_BYTES = 16 * 1024 ** 2;
/** The events of one job kept by a lookup: its most recent ones (a forged flood cannot fill memory). */
const MAX_EVENTS_PER_JOB = 10_000;
const MAX_TEXT = 10_000;

const RANK: Readonly<Record<HistoryKind, number>> = {
  published: 0,
  started: 1,
  progress: 1,
  failed: 2,
  retrying: 3,
  completed: 4,
  dead: 4,
  cancelled: 4,
};

/** Offsets (batches) an index block of the history spans at most, and its entries at most. */
const BLOCK = { offsets: 1024, maxEntries: 20_000 };
/** A history of fewer batches than this is read whole, without its index. */
const SMALL_HISTORY = 32;

/**
 * Where job X is. Without `index`: reads the history from its oldest kept record and keeps the events of
 * one job (a batch is parsed only when its bytes contain the id). With it: reads the offset index (a few
 * bytes a job a batch), the batches it points at and the part no block covers yet (the tail since the last
 * indexed lookup), which it indexes for the next lookup. Either way every event shown comes from a batch
 * read, proven and parsed here: a wrong index entry costs a read, never an event.
 */
export async function findJob(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  jobId: string,
  idleMs: number,
  reader: RecordReader,
  index?: IndexedStream,
): Promise<JobStatus> {
  const needle = Buffer.from(JSON.stringify(jobId));
  const events: JobEvent[] = [];
  const seen = new Set<number>();
  const onRecord = (record: StreamRecord, builder?: IndexBuilder) => {
    if (seen.has(record.offset)) return;
    seen.add(record.offset);
    if (builder === undefined && !record.content.includes(needle)) return;
    const where = { offset: record.offset, stream };
    if (!reader.accept(record.content, record.properties.headers, where)) return;
    const batch = parseHistoryBatch(record.content);
    if (batch === undefined) return reader.skip('malformed', where);
    builder?.add(record.offset, jobKeys(batch));
    for (const e of batch.e) {
      if (e?.j !== jobId) continue;
      const event = isHistoryEvent(e) ? jobEvent(e, batch) : undefined;
      if (event === undefined) reader.skip('malformed', where);
      else if (events.push(event) > MAX_EVENTS_PER_JOB) events.shift();
    }
  };
  if (index === undefined)
    await readToEnd(openChannel, stream, 'first', { idleMs, prefetch: 200 }, (r) => onRecord(r));
  else await readThroughIndex(index, jobId, onRecord);
  // Batches from several processes interleave: order by time, then by the lifecycle's order.
  events.sort((a, b) => a.at.getTime() - b.at.getTime() || RANK[a.kind] - RANK[b.kind]);
  return jobStatus(jobId, events, Date.now());
}

/**
 * Hands `visit` the batches the index points at (read as soon as the history's end is known, while the
 * rest of the index still arrives) and those no block covers (indexed as they are read); a short history
 * whole, without waiting for the index's end.
 */
async function readThroughIndex(
  index: IndexedStream,
  jobId: string,
  visit: (record: StreamRecord, builder?: IndexBuilder) => void,
): Promise<void> {
  const { openChannel, stream, idleMs } = index;
  const early: Promise<void>[] = [];
  const bounds = streamBounds(index);
  const lookUp = lookUpIndex(
    index,
    keyHash(`j:${jobId}`),
    (offsets) => early.push(readOffsets(openChannel, stream, offsets, idleMs, (r) => visit(r))),
    bounds,
  );
  lookUp.catch(() => undefined);
  const { first, end } = await bounds;
  if (first !== undefined && end !== undefined && end - first < SMALL_HISTORY) {
    const range = {
      max: Number.POSITIVE_INFINITY,
      until: end,
      idleMs: Math.max(idleMs, 5000),
      prefetch: 200,
    };
    await readStream(openChannel, stream, first, range, (r) => visit(r));
    return;
  }
  const found = await lookUp;
  await Promise.all([
    ...early,
    ...(found === undefined
      ? []
      : [
          readOffsets(openChannel, stream, found.candidates, idleMs, (r) => visit(r)),
          indexGaps(index, found, BLOCK, visit),
        ]),
  ]);
}

/** The index keys of a batch: each job id it holds events of, once. */
function jobKeys(batch: HistoryBatch): string[] {
  const jobs = new Set<string>();
  for (const e of batch.e)
    if (e !== null && typeof e === 'object' && typeof e.j === 'string') jobs.add(`j:${e.j}`);
  return [...jobs];
}

/** One event as `ops.job(id)` lists it, with the process that recorded it. */
export function jobEvent(e: HistoryEvent, batch: HistoryBatch): JobEvent {
  return {
    kind: e.k,
    at: new Date(e.t),
    name: e.n,
    queue: e.q,
    ...(e.a !== undefined ? { attempt: e.a } : {}),
    ...(e.d !== undefined ? { durationMs: e.d } : {}),
    ...(e.u !== undefined ? { runAt: new Date(e.u) } : {}),
    ...(e.r !== undefined ? { reason: e.r } : {}),
    ...(e.x !== undefined ? { error: e.x } : {}),
    ...(e.k === 'progress' ? { progress: e.g } : {}),
    ...keptContents(e),
    process: `${batch.h}:${batch.pid}`,
    processId: batch.p,
  };
}

/** A batch record parsed, its envelope checked (each event is checked by {@link isHistoryEvent}). */
export function parseHistoryBatch(content: Buffer): HistoryBatch | undefined {
  const batch = parseJsonObject(content, MAX_BATCH_BYTES) as Partial<HistoryBatch> | undefined;
  if (batch === undefined || !Array.isArray(batch.e)) return undefined;
  if (typeof batch.p !== 'string' || typeof batch.h !== 'string' || typeof batch.pid !== 'number')
    return undefined;
  return batch as HistoryBatch;
}

function isText(value: unknown): boolean {
  return typeof value === 'string' && value.length <= MAX_TEXT;
}

function isOptionalNumber(value: unknown): boolean {
  return value === undefined || (typeof value === 'number' && Number.isFinite(value));
}

/** An event's fields, each of its type and bounds (a forged one is skipped, never shown as a date of NaN). */
export function isHistoryEvent(e: unknown): e is HistoryEvent {
  if (e === null || typeof e !== 'object') return false;
  const event = e as Record<string, unknown>;
  return (
    typeof event.k === 'string' &&
    Object.hasOwn(RANK, event.k) &&
    typeof event.t === 'number' &&
    Number.isSafeInteger(event.t) &&
    isText(event.n) &&
    isText(event.q) &&
    isOptionalNumber(event.a) &&
    isOptionalNumber(event.d) &&
    isOptionalNumber(event.u) &&
    (event.r === undefined || isText(event.r)) &&
    (event.x === undefined || isText(event.x)) &&
    hasValidContents(event)
  );
}
