import type * as amqp from 'amqplib';
import type { RecordReader } from '../records';
import { lastOffset, readStream } from '../streams';
import { decodeAggregate, type AggregateRecord } from './aggregate-record';
import type { AggregateLevel } from './options';

/** What a graph asks for: a level's stream, and the range of bucket starts [fromMs, toMs). */
export interface AggregateRead {
  readonly stream: string;
  /** The level of the stream's records: signed beside each record (a copy into another level's stream fails). */
  readonly level: AggregateLevel;
  /** The level (the stream's bucket length), ms: a record of another length is skipped. */
  readonly lengthMs: number;
  readonly fromMs: number;
  readonly toMs: number;
  /** A read stops after this many records (`truncated`), however long the range. */
  readonly maxRecords: number;
  readonly idleMs: number;
  /** The planned job queues (topology keys): a record's other queues are skipped, counted. */
  readonly queues: ReadonlySet<string>;
}

/** What a read read and skipped. */
export interface AggregateReadResult {
  readonly records: number;
  /** Records or queue entries refused: bad proof, shape, length, or queues out of the plan. */
  readonly skipped: number;
  /** The read stopped at `maxRecords` before the range's end. */
  readonly truncated: boolean;
}

/**
 * Reads one level's stream from the first record written at or after `fromMs` (a stream attached by
 * timestamp: the records before the range are never read) to the stream's end as the read began, checks
 * each record (proof, shape, length, plan) and hands it to `add`.
 */
export async function readAggregates(
  openChannel: () => Promise<amqp.Channel>,
  read: AggregateRead,
  reader: RecordReader,
  /** Each record in the range, checked, with only the planned queues (an AggregateMerger's `add`). */
  add: (record: AggregateRecord) => void,
): Promise<AggregateReadResult> {
  let skipped = 0;
  let records = 0;
  /** The record if it may be added; else why not (each but `out-of-range` counted by the reader). */
  const checked = (
    content: Buffer,
    headers: Record<string, unknown> | undefined,
    where: Record<string, unknown>,
  ): AggregateRecord | 'refused' | 'out-of-range' => {
    if (!reader.accept(content, headers, where, read.level)) return 'refused';
    const record = decodeAggregate(content);
    if (typeof record === 'string') return reader.skip(record, where) || 'refused';
    if (record.l !== read.lengthMs) return reader.skip('out-of-plan', where) || 'refused';
    if (record.s < read.fromMs || record.s >= read.toMs) return 'out-of-range';
    return record;
  };
  const end = lastOffset(openChannel, read.stream, read.idleMs);
  end.catch(() => undefined);
  const result = await readStream(
    openChannel,
    read.stream,
    { timestampMs: read.fromMs },
    { max: read.maxRecords, until: end, idleMs: read.idleMs, prefetch: 500 },
    (r) => {
      records += 1;
      const where = { offset: r.offset, stream: read.stream };
      const record = checked(r.content, r.properties.headers, where);
      if (typeof record === 'string') {
        if (record !== 'out-of-range') skipped += 1;
        return;
      }
      for (const queue of Object.keys(record.q))
        if (!read.queues.has(queue)) skipped += Number(!reader.skip('out-of-plan', where));
      add({ ...record, q: Object.fromEntries(Object.entries(record.q).filter(([q]) => read.queues.has(q))) });
    },
  );
  await end;
  return {
    records,
    skipped,
    truncated: result.count >= read.maxRecords,
  };
}
