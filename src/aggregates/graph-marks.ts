/**
 * Marks on the graphs' time axis (a contract: docs/guide/aggregates.md): one small record per deploy
 * (`ops.mark`, `warren mark deploy`) or operator pause and resume (`ops.pause`, `ops.resume`), appended to
 * the namespace's marks stream, JSON, signed as role `marks`:
 * `{ v: 1, k: 'deploy' | 'pause' | 'resume', t: the writer's clock, ms, h: host, q?: queue, n?: note,
 * r?: release }`. The stream's order is the broker's; `t` is the writer's clock, so marks of two
 * machines may be a few seconds off each other.
 */
import type * as amqp from 'amqplib';
import type { RecordReader } from '../records';
import { lastOffset, readStream } from '../streams';

export const MARK_KINDS = ['deploy', 'pause', 'resume'] as const;
export type MarkKind = (typeof MARK_KINDS)[number];

/** A mark as `ops.aggregates()` returns it. */
export interface GraphMark {
  readonly kind: MarkKind;
  /** The writer's clock when it wrote the mark, ms since epoch. */
  readonly at: number;
  readonly host: string;
  /** The queue paused or resumed (a topology key). */
  readonly queue?: string;
  readonly note?: string;
  /** The version deployed, as the caller named it. */
  readonly release?: string;
}

/** A note is cut at this many characters; a release, host or queue above their limit is refused. */
export const MAX_NOTE_CHARS = 200;
export const MAX_RELEASE_CHARS = 100;
const MAX_TEXT = 200;
const MAX_MARK_BYTES = 4096;
/** A graph shows at most this many marks (the newest in its range are kept). */
export const MAX_GRAPH_MARKS = 500;

export function encodeMark(mark: GraphMark): Buffer {
  const { kind: k, at: t, host: h, queue: q, note: n, release: r } = mark;
  return Buffer.from(JSON.stringify({ v: 1, k, t, h, q, n, r }));
}

/** A mark read back, checked field by field; anything else is refused as `malformed` or `too-large`. */
export function decodeMark(body: Buffer): GraphMark | 'malformed' | 'too-large' {
  if (body.length > MAX_MARK_BYTES) return 'too-large';
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return 'malformed';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'malformed';
  const { v, k, t, h, q, n, r } = value as Record<string, unknown>;
  if (v !== 1 || !MARK_KINDS.includes(k as MarkKind) || !isText(h, MAX_TEXT)) return 'malformed';
  if (typeof t !== 'number' || !Number.isSafeInteger(t) || t < 0) return 'malformed';
  if (!isOptionalText(q, MAX_TEXT) || !isOptionalText(n, MAX_NOTE_CHARS)) return 'malformed';
  if (!isOptionalText(r, MAX_RELEASE_CHARS)) return 'malformed';
  if ((k === 'deploy') !== (q === undefined)) return 'malformed';
  return {
    kind: k as MarkKind,
    at: t,
    host: h,
    ...(q !== undefined ? { queue: q as string } : {}),
    ...(n !== undefined ? { note: n as string } : {}),
    ...(r !== undefined ? { release: r as string } : {}),
  };
}

/** The marks read for a graph, and the records skipped (bad proof, shape, or a queue out of the plan). */
export interface MarksRead {
  readonly marks: readonly GraphMark[];
  readonly skipped: number;
}

/**
 * Reads the marks stream from the first record written at or after `fromMs` (by timestamp, like the
 * aggregates) to its end as the read began; keeps the marks whose `at` is in [fromMs, toMs], the newest
 * {@link MAX_GRAPH_MARKS}. No stream (no mark was ever made): NOT_FOUND, for the caller.
 */
export async function readMarks(
  openChannel: () => Promise<amqp.Channel>,
  read: {
    readonly stream: string;
    readonly fromMs: number;
    readonly toMs: number;
    readonly idleMs: number;
    readonly queues: ReadonlySet<string>;
  },
  reader: RecordReader,
): Promise<MarksRead> {
  const marks: GraphMark[] = [];
  let skipped = 0;
  /** The mark if it may be shown; undefined (counted by the reader) if not. */
  const checked = (
    content: Buffer,
    headers: Record<string, unknown> | undefined,
    where: Record<string, unknown>,
  ): GraphMark | undefined => {
    if (!reader.accept(content, headers, where)) return undefined;
    const mark = decodeMark(content);
    if (typeof mark === 'string') return void reader.skip(mark, where);
    if (mark.queue !== undefined && !read.queues.has(mark.queue))
      return void reader.skip('out-of-plan', where);
    return mark;
  };
  const end = lastOffset(openChannel, read.stream, read.idleMs);
  end.catch(() => undefined);
  await readStream(
    openChannel,
    read.stream,
    { timestampMs: read.fromMs },
    { max: 100_000, until: end, idleMs: read.idleMs, prefetch: 500 },
    (r) => {
      const where = { offset: r.offset, stream: read.stream };
      const mark = checked(r.content, r.properties.headers, where);
      if (mark === undefined) {
        skipped += 1;
        return;
      }
      if (mark.at < read.fromMs || mark.at > read.toMs) return;
      marks.push(mark);
      if (marks.length > MAX_GRAPH_MARKS) marks.shift();
    },
  );
  await end;
  return { marks: marks.sort((a, b) => a.at - b.at), skipped };
}

function isText(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= max;
}

function isOptionalText(value: unknown, max: number): boolean {
  return value === undefined || isText(value, max);
}
