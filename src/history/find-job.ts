import type * as amqp from 'amqplib';
import type { RecordReader } from '../records';
import {
  decodeBlock,
  encodeBlock,
  firstOffset,
  IndexBuilder,
  keyHash,
  lastOffset,
  readOffsets,
  readStream,
  readToEnd,
  uncovered,
  type StreamRecord,
} from '../streams';
import {
  jobStatus,
  type HistoryEvent,
  type HistoryBatch,
  type HistoryKind,
  type JobEvent,
  type JobStatus,
} from './history-event';

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

/** What a lookup through the history's offset index needs (streams/offset-index.ts). */
export interface HistoryIndex {
  /** The index's stream (topology naming), declared. */
  readonly stream: string;
  /** Verifies the index's records (its own replay guard). */
  readonly reader: RecordReader;
  /** Appends one index block, signed (best effort). */
  readonly append: (content: Buffer) => Promise<void>;
}

/** Offsets (batches) an index block spans at most. */
const BLOCK_OFFSETS = 1024;

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
  index?: HistoryIndex,
): Promise<JobStatus> {
  const needle = Buffer.from(JSON.stringify(jobId));
  const events: JobEvent[] = [];
  const seen = new Set<number>();
  const onRecord = (record: StreamRecord, builder?: IndexBuilder) => {
    builder?.saw(record.offset);
    if (seen.has(record.offset)) return;
    seen.add(record.offset);
    if (builder === undefined && !record.content.includes(needle)) return;
    const where = { offset: record.offset, stream };
    if (!reader.accept(record.content, record.properties.headers, where)) return;
    const batch = parseHistoryBatch(record.content);
    if (batch === undefined) {
      reader.skip('malformed', where);
      return;
    }
    if (builder) {
      const jobs = new Set<string>();
      for (const e of batch.e)
        if (e !== null && typeof e === 'object' && typeof e.j === 'string') jobs.add(e.j);
      builder.add(
        record.offset,
        [...jobs].map((j) => `j:${j}`),
      );
    }
    collect(batch, where);
  };
  const collect = (batch: HistoryBatch, where: { offset: number; stream: string }) => {
    for (const e of batch.e) {
      if (e?.j !== jobId) continue;
      if (!isHistoryEvent(e)) {
        reader.skip('malformed', where);
        continue;
      }
      events.push({
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
        process: `${batch.h}:${batch.pid}`,
        processId: batch.p,
      });
      if (events.length >= MAX_EVENTS_PER_JOB) events.shift();
    }
  };
  if (index === undefined)
    await readToEnd(openChannel, stream, 'first', { idleMs, prefetch: 200 }, (r) => onRecord(r));
  else await findIndexed(openChannel, stream, jobId, idleMs, index, onRecord);
  // Batches from several processes interleave: order by time, then by the lifecycle's order.
  events.sort((a, b) => a.at.getTime() - b.at.getTime() || RANK[a.kind] - RANK[b.kind]);
  return jobStatus(jobId, events, Date.now());
}

async function findIndexed(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  jobId: string,
  idleMs: number,
  index: HistoryIndex,
  onRecord: (record: StreamRecord, builder?: IndexBuilder) => void,
): Promise<void> {
  const hash = keyHash(`j:${jobId}`);
  const blocks: { from: number; to: number }[] = [];
  const candidates = new Set<number>();
  const [, first, end] = await Promise.all([
    readToEnd(openChannel, index.stream, 'first', { idleMs, prefetch: 200 }, (r) => {
      const where = { offset: r.offset, stream: index.stream };
      if (!index.reader.accept(r.content, r.properties.headers, where, 'index')) return;
      const block = decodeBlock(r.content, hash);
      if (block === undefined) return index.reader.skip('malformed', where);
      blocks.push(block);
      for (const o of block.offsets) candidates.add(o);
    }),
    firstOffset(openChannel, stream, idleMs),
    lastOffset(openChannel, stream, idleMs),
  ]);
  if (first === undefined || end === undefined) return;
  const wanted = [...candidates].filter((o) => o >= first && o <= end);
  await Promise.all([
    readOffsets(openChannel, stream, wanted, idleMs, (r) => onRecord(r)),
    (async () => {
      for (const gap of uncovered(blocks, first, end)) {
        const builder = new IndexBuilder(BLOCK_OFFSETS);
        await readStream(
          openChannel,
          stream,
          gap.from,
          { max: Number.POSITIVE_INFINITY, until: gap.to, idleMs: Math.max(idleMs, 5000), prefetch: 200 },
          (r) => onRecord(r, builder),
        );
        for (const block of builder.finish()) await index.append(encodeBlock(block)).catch(() => undefined);
      }
    })(),
  ]);
}

function parseHistoryBatch(content: Buffer): HistoryBatch | undefined {
  if (content.length > MAX_BATCH_BYTES) return undefined;
  let batch: Partial<HistoryBatch> | null;
  try {
    batch = JSON.parse(content.toString('utf8')) as Partial<HistoryBatch> | null;
  } catch {
    return undefined;
  }
  if (batch === null || typeof batch !== 'object' || !Array.isArray(batch.e)) return undefined;
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
function isHistoryEvent(e: unknown): e is HistoryEvent {
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
    (event.x === undefined || isText(event.x))
  );
}
