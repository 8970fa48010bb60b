import {
  AggregateMerger,
  align,
  levelMs,
  readAggregates,
  type AggregateRead,
  resolveAggregatesOptions,
  type AggregateLevel,
  type AggregatesOptions,
  type AggregateSeries,
  type GraphMark,
} from '../aggregates';
import { isAmqpReply } from '../connection';
import { readGraphMarks } from './mark-ops';
import type { RecordTrust } from '../records';
import { isJobQueue, type TopologyPlan } from '../topology';
import type { OpsConnection } from './ops-connection';

/** The ranges the graphs offer: the last hour (of buckets), day and week (of hours). */
export type GraphRange = 'hour' | 'day' | 'week';
export const GRAPH_RANGES: readonly GraphRange[] = ['hour', 'day', 'week'];

/** A graph reads at most this many records, whatever the range (20 processes × 168 hours is 3360). */
export const MAX_GRAPH_RECORDS = 10_000;

const RANGES: { readonly [R in GraphRange]: { readonly level: AggregateLevel; readonly steps: number } } = {
  hour: { level: 'bucket', steps: 60 },
  day: { level: 'hour', steps: 24 },
  week: { level: 'hour', steps: 168 },
};

/** What `ops.aggregates()` answers: per queue (and `*`, all of them), a point per step of the range. */
export interface AggregatesView {
  readonly range: GraphRange;
  /** The stream read: `bucket` for the hour, `hour` for a day or a week (with the open hour from buckets). */
  readonly level: AggregateLevel;
  /** The bucket length the records were written with (the `aggregates.bucketMs` given), ms. */
  readonly bucketMs: number;
  /** The length of one point, ms. */
  readonly stepMs: number;
  /** The first point's start, and the end of the last point, ms since epoch. */
  readonly fromMs: number;
  readonly toMs: number;
  readonly series: readonly AggregateSeries[];
  /** Records read, and records (or queue entries) skipped: bad proof or shape, another bucket length, not in the plan. */
  readonly records: number;
  readonly skipped: number;
  /** The read stopped at {@link MAX_GRAPH_RECORDS}. */
  readonly truncated: boolean;
  /**
   * The marks inside the range, oldest first: deploys (`ops.mark`, `warren mark deploy`), pauses and
   * resumes (`ops.pause`, `ops.resume`), each at its writer's clock (docs/guide/aggregates.md#marks).
   */
  readonly marks: readonly GraphMark[];
  /** Mark records skipped: bad proof or shape, or naming a queue out of the plan. */
  readonly marksSkipped: number;
  /** False when the aggregates streams do not exist: no process of the namespace runs with `aggregates`. */
  readonly isWritten: boolean;
}

/**
 * `ops.aggregates({ range })`: reads the level's stream from the range's start (by timestamp, so a week's
 * read never touches the records before it) and adds every process's records up. A day or a week ends with
 * the open hour, read from the bucket stream (an hour record is written when its hour ends).
 */
export async function readAggregatesView(
  plan: TopologyPlan,
  connection: OpsConnection,
  trust: RecordTrust,
  input: AggregatesOptions | undefined,
  idleMs: number,
  range: GraphRange,
  now = Date.now(),
): Promise<AggregatesView> {
  const options = resolveAggregatesOptions(input ?? {});
  const { level, steps } = RANGES[range];
  const stepMs = levelMs(options, level);
  const bucketMs = options.bucketMs;
  // The bucket level ends with the last closed bucket; the hour level with the open hour, partial.
  const toMs = level === 'bucket' ? align(now, bucketMs) : align(now, stepMs) + stepMs;
  const fromMs = toMs - steps * stepMs;
  const { marks, skipped: marksSkipped } = await readGraphMarks(plan, connection, trust, {
    fromMs,
    toMs: Math.max(toMs, now),
    idleMs,
  });
  const view = { range, level, bucketMs, stepMs, fromMs, toMs, marks, marksSkipped };
  const { manager } = await connection.open();
  const openChannel = () => manager.openChannel();
  const merger = new AggregateMerger();
  const reads = readsOf(plan, { ...view, idleMs });
  let records = 0;
  let skipped = 0;
  let truncated = false;
  try {
    for (const { read, at } of reads) {
      const found = await readAggregates(
        openChannel,
        { ...read, maxRecords: MAX_GRAPH_RECORDS - records },
        trust.reader('aggregates'),
        (record) => merger.add(record, at ?? record.s),
      );
      records += found.records;
      skipped += found.skipped;
      truncated ||= found.truncated;
    }
  } catch (error) {
    if (!isAmqpReply(error, 'NOT_FOUND')) throw error;
    return { ...view, series: [], records, skipped, truncated, isWritten: false };
  }
  const series = merger.series(fromMs, toMs, stepMs);
  return { ...view, series, records, skipped, truncated, isWritten: true };
}

/**
 * The reads of a view: its level's stream; for a day or a week, its hours before the open hour, and the
 * open hour from its buckets. A process that stops appends its partial hour too: read beside the buckets it
 * would count that hour's runs twice, and the buckets hold them all (the open bucket is appended on stop).
 */
function readsOf(
  plan: TopologyPlan,
  view: Pick<AggregatesView, 'level' | 'stepMs' | 'bucketMs' | 'fromMs' | 'toMs'> & {
    readonly idleMs: number;
  },
): { read: Omit<AggregateRead, 'maxRecords'>; at?: number }[] {
  const { level, stepMs, bucketMs, fromMs, toMs, idleMs } = view;
  const queues = new Set(plan.queues.filter(isJobQueue).map((q) => q.key));
  const openHour = level === 'bucket' ? toMs : toMs - stepMs;
  const reads: { read: Omit<AggregateRead, 'maxRecords'>; at?: number }[] = [
    {
      read: {
        stream: plan.naming.aggregates(level),
        level,
        lengthMs: stepMs,
        fromMs,
        toMs: openHour,
        idleMs,
        queues,
      },
    },
  ];
  if (level !== 'bucket') {
    const stream = plan.naming.aggregates('bucket');
    const read = {
      stream,
      level: 'bucket' as const,
      lengthMs: bucketMs,
      fromMs: openHour,
      toMs,
      idleMs,
      queues,
    };
    reads.push({ read, at: openHour });
  }
  return reads;
}
