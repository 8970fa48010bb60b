import type { RecordReader } from '../records';
import {
  indexGaps,
  keyHash,
  lookUpIndex,
  readOffsets,
  type IndexBuilder,
  type IndexedStream,
  type StreamRecord,
} from '../streams';
import type { IndexedLetter } from './dead-letter-index';
import { compileFilter, type LetterFilter, type LetterState } from './letter-filter';
import { decodeRecord, signedFields, type LoggedLetter, type Marker } from './log-record';

/** The answer of an indexed query. */
export interface IndexedAnswer {
  readonly letters: IndexedLetter[];
  readonly count: number;
  /** The log's last offset when the query read it. */
  readonly upTo: number;
  /** The records of the first matches, as read (a replay republishes them without reading them again). */
  readonly records: ReadonlyMap<number, StreamRecord>;
}

/** Records of matches kept for a replay: a chunk's worth of reads saved, a bounded memory. */
const KEPT_RECORDS = 10_000;
/** Offsets an index block of the log spans at most. */
const BLOCK_OFFSETS = 4096;
/** Payload fields indexed per letter: scalar leaves, this deep. */
const FIELD_DEPTH = 4;
const MAX_FIELDS = 32;

/**
 * The key of the most selective indexed part of a filter: '' when it names offsets (read those), undefined
 * when it has none (a scan of the log answers).
 */
export function indexKey(filter: LetterFilter): string | undefined {
  if (filter.offsets !== undefined) return '';
  if (filter.jobId !== undefined) return `j:${filter.jobId}`;
  if (filter.field !== undefined) return `f:${filter.field.path}=${String(filter.field.equals)}`;
  if (filter.reason !== undefined) return `r:${filter.reason}`;
  return undefined;
}

/** The keys a letter is indexed under: its job id, its reason, its payload's scalar fields. */
export function letterKeys(letter: LoggedLetter): string[] {
  const keys = [`r:${letter.reason}`];
  if (letter.jobId !== undefined) keys.push(`j:${letter.jobId}`);
  const walk = (value: unknown, path: string, depth: number) => {
    if (keys.length >= MAX_FIELDS + 2 || value === null || value === undefined) return;
    if (typeof value !== 'object') {
      if (path !== '') keys.push(`f:${path}=${String(value)}`);
      return;
    }
    if (depth >= FIELD_DEPTH || Array.isArray(value)) return;
    for (const [k, v] of Object.entries(value as Record<string, unknown>))
      walk(v, path === '' ? k : `${path}.${k}`, depth + 1);
  };
  walk(letter.data, '', 0);
  return keys;
}

/**
 * Answers a query whose filter names offsets, a job id, a payload field or a reason through the log's
 * offset index (streams/offset-index.ts): reads the index (a few bytes a letter), every marker it lists,
 * the records it points at, and the part of the log no block covers yet (the tail since the last indexed
 * read), which it indexes for the next query. Every letter in the answer is its real record, proven and
 * matched against the whole filter again. Memory: the matches and their states.
 */
export async function queryIndexed(
  log: IndexedStream,
  reader: RecordReader,
  filter: LetterFilter,
  key: string,
  limit = Number.POSITIVE_INFINITY,
): Promise<IndexedAnswer> {
  const found = await lookUpIndex(log, key === '' ? -1 : keyHash(key));
  if (found === undefined) return { letters: [], count: 0, upTo: -1, records: new Map() };
  for (const o of filter.offsets ?? []) if (o >= found.first && o <= found.end) found.candidates.add(o);
  const query = new LetterQuery(log.stream, reader, filter);
  await indexGaps(log, found, { offsets: BLOCK_OFFSETS }, (r, builder) => query.visit(r, builder));
  // Every marker first: a letter's state decides whether it is read at all.
  await readOffsets(log.openChannel, log.stream, found.marks, log.idleMs, (r) => query.visit(r));
  query.settleStates();
  const wanted = [...found.candidates]
    .filter((o) => !query.found.has(o) && query.isInState(o))
    .sort((a, b) => a - b);
  // In offset order, a batch at a time, until the limit is met (a false entry is a read, never a match).
  const batch = Number.isFinite(limit) ? Math.max(64, Math.min(2000, limit * 2)) : 2000;
  for (let i = 0; i < wanted.length && query.selected() < limit; i += batch)
    await readOffsets(log.openChannel, log.stream, wanted.slice(i, i + batch), log.idleMs, (r) =>
      query.visit(r),
    );
  return { ...query.answer(limit), upTo: found.end, records: query.records };
}

/** What one indexed query gathers from the records it reads. */
class LetterQuery {
  readonly found = new Map<number, LoggedLetter>();
  readonly records = new Map<number, StreamRecord>();
  private readonly markers: [number, Marker][] = [];
  private readonly states = new Map<number, LetterState>();
  private readonly matches: ReturnType<typeof compileFilter>;

  constructor(
    private readonly stream: string,
    private readonly reader: RecordReader,
    private readonly filter: LetterFilter,
  ) {
    this.matches = compileFilter({ ...filter, state: undefined });
  }

  visit(r: StreamRecord, builder?: IndexBuilder): void {
    const where = { offset: r.offset, stream: this.stream };
    if (!this.reader.accept(r.content, r.properties.headers, where, signedFields(r.properties))) return;
    const record = decodeRecord(r.offset, r.content, r.properties);
    if (record === undefined) {
      this.reader.skip('malformed', where);
      return;
    }
    if (record.kind === 'marker') {
      builder?.mark(r.offset);
      this.markers.push([r.offset, record.marker]);
      return;
    }
    builder?.add(r.offset, letterKeys(record.letter));
    if (!this.matches(record.letter, 'dead')) return;
    this.found.set(r.offset, record.letter);
    if (this.records.size < KEPT_RECORDS) this.records.set(r.offset, r);
  }

  /** Markers in log order: the later marker of an offset wins. */
  settleStates(): void {
    this.markers.sort((a, b) => a[0] - b[0]);
    for (const [, marker] of this.markers) for (const o of marker.offsets) this.states.set(o, marker.action);
  }

  isInState(offset: number): boolean {
    return this.filter.state === undefined || (this.states.get(offset) ?? 'dead') === this.filter.state;
  }

  selected(): number {
    let n = 0;
    for (const o of this.found.keys()) if (this.isInState(o)) n += 1;
    return n;
  }

  answer(limit: number): { letters: IndexedLetter[]; count: number } {
    const letters: IndexedLetter[] = [];
    let count = 0;
    for (const offset of [...this.found.keys()].sort((a, b) => a - b)) {
      if (!this.isInState(offset)) continue;
      count += 1;
      if (letters.length < limit)
        letters.push({ ...this.found.get(offset)!, state: this.states.get(offset) ?? 'dead' });
    }
    return { letters, count };
  }
}
