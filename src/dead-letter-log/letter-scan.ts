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
import type { IndexedLetter, IndexStats } from './dead-letter-index';
import { compileFilter, type LetterFilter, type LetterState } from './letter-filter';
import { decodeRecord, signedFields, type LoggedLetter, type Marker } from './log-record';

/** What one pass over the log found. */
export interface LetterScan {
  /** The matching letters, oldest first: at most `limit`. */
  readonly letters: IndexedLetter[];
  /** How many letters match in all. */
  readonly count: number;
  readonly stats: IndexStats;
}

const SCAN_PREFETCH = 2000;

/**
 * Answers one query by reading the log once from its first kept offset to its end, keeping only what the
 * query needs: the matching letters (the first `limit` of them; every match while a `state` is asked for,
 * since a later marker may still change a letter's state) and one state per letter offset. Nothing of the
 * rest stays: memory grows with the matches, not with the log (an in-memory index keeps about 2.3× the
 * log's bytes). A fresh process (the CLI) has no index to warm, so this is its search.
 */
export async function scanLog(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  idleMs: number,
  reader: RecordReader,
  filter: LetterFilter,
  limit = Number.POSITIVE_INFINITY,
): Promise<LetterScan> {
  const matches = compileFilter({ ...filter, state: undefined });
  const keepAll = filter.state !== undefined;
  const kept = new Map<number, LoggedLetter>();
  const states = new Map<number, LetterState>();
  let matched = 0;
  let first: number | undefined;
  let next = 0;
  let oldest: LoggedLetter | undefined;
  await readToEnd(openChannel, stream, 'first', { idleMs, prefetch: SCAN_PREFETCH }, (r) => {
    first ??= r.offset;
    next = r.offset + 1;
    const where = { offset: r.offset, stream };
    if (!reader.accept(r.content, r.properties.headers, where, signedFields(r.properties))) return;
    const record = decodeRecord(r.offset, r.content, r.properties);
    if (record === undefined) {
      reader.skip('malformed', where);
      return;
    }
    if (record.kind === 'marker') {
      for (const offset of record.marker.offsets)
        if (states.has(offset)) states.set(offset, record.marker.action);
      return;
    }
    states.set(r.offset, 'dead');
    oldest ??= record.letter;
    if (!matches(record.letter, 'dead')) return;
    matched += 1;
    if (keepAll || kept.size < limit) kept.set(r.offset, record.letter);
  });
  const letters: IndexedLetter[] = [];
  for (const letter of kept.values()) {
    const state = states.get(letter.offset) ?? 'dead';
    if (filter.state !== undefined && state !== filter.state) continue;
    if (letters.length < limit) letters.push({ ...letter, state });
  }
  let count = matched;
  if (keepAll) {
    count = 0;
    for (const offset of kept.keys()) if (states.get(offset) === filter.state) count += 1;
  }
  const byState: Record<LetterState, number> = { dead: 0, replayed: 0, purged: 0 };
  for (const state of states.values()) byState[state] += 1;
  return {
    letters,
    count,
    stats: {
      expiredBefore: first ?? 0,
      nextOffset: next,
      letters: states.size,
      keptSince: oldest && new Date(oldest.deadAt),
      byState,
      expiredDead: 0,
    },
  };
}

/** What an indexed query needs besides the log. */
export interface IndexedQueryDeps {
  readonly openChannel: () => Promise<amqp.Channel>;
  readonly stream: string;
  /** The log's offset index (a stream of its own, declared). */
  readonly indexStream: string;
  readonly idleMs: number;
  /** Verifies the log's records. */
  readonly reader: RecordReader;
  /** Verifies the index's records (its own replay guard). */
  readonly indexReader: RecordReader;
  /** Appends one index block, signed (best effort: a lookup does not fail for it). */
  readonly appendIndex: (content: Buffer) => Promise<void>;
}

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

/** Offsets an index block spans at most. */
const BLOCK_OFFSETS = 4096;
/** Payload fields indexed per letter: scalar leaves, this deep. */
const FIELD_DEPTH = 4;
const MAX_FIELDS = 32;

/** The key of the most selective indexed part of a filter; undefined when it has none (a scan answers). */
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
    if (keys.length >= MAX_FIELDS + 2) return;
    if (value === null || value === undefined) return;
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
 * Answers a query whose filter names a job id, a payload field or a reason through the log's offset index
 * (streams/offset-index.ts): reads the index (a few bytes a letter), the records it points at, every
 * marker it lists, and the part of the log no block covers yet (the tail since the last indexed read),
 * which it indexes for the next query. Every letter in the answer is its real record, proven and matched
 * against the whole filter again. Memory: the matches and their states.
 */
export async function queryIndexed(
  deps: IndexedQueryDeps,
  filter: LetterFilter,
  /** From indexKey: '' when the filter names its offsets (no entry is looked up then). */
  key: string,
  limit = Number.POSITIVE_INFINITY,
): Promise<IndexedAnswer> {
  const hash = key === '' ? -1 : keyHash(key);
  const matches = compileFilter({ ...filter, state: undefined });
  const blocks: { from: number; to: number }[] = [];
  const candidates = new Set<number>(filter.offsets ?? []);
  const marks = new Set<number>();
  const [, first, end] = await Promise.all([
    readToEnd(deps.openChannel, deps.indexStream, 'first', { idleMs: deps.idleMs, prefetch: 200 }, (r) => {
      const where = { offset: r.offset, stream: deps.indexStream };
      if (!deps.indexReader.accept(r.content, r.properties.headers, where, 'index')) return;
      const block = decodeBlock(r.content, hash);
      if (block === undefined) return deps.indexReader.skip('malformed', where);
      blocks.push(block);
      for (const o of block.offsets) candidates.add(o);
      for (const o of block.marks) marks.add(o);
    }),
    firstOffset(deps.openChannel, deps.stream, deps.idleMs),
    lastOffset(deps.openChannel, deps.stream, deps.idleMs),
  ]);
  if (first === undefined || end === undefined)
    return { letters: [], count: 0, upTo: -1, records: new Map() };
  const records = new Map<number, StreamRecord>();
  const markers: [number, Marker][] = [];
  const found = new Map<number, LoggedLetter>();
  const onRecord = (r: StreamRecord, builder?: IndexBuilder) => {
    builder?.saw(r.offset);
    const where = { offset: r.offset, stream: deps.stream };
    if (!deps.reader.accept(r.content, r.properties.headers, where, signedFields(r.properties))) return;
    const record = decodeRecord(r.offset, r.content, r.properties);
    if (record === undefined) return deps.reader.skip('malformed', where);
    if (record.kind === 'marker') {
      builder?.mark(r.offset);
      markers.push([r.offset, record.marker]);
      return;
    }
    builder?.add(r.offset, letterKeys(record.letter));
    if (!matches(record.letter, 'dead')) return;
    found.set(r.offset, record.letter);
    if (records.size < KEPT_RECORDS) records.set(r.offset, r);
  };
  // The part no block covers: read, matched, indexed for the next query.
  for (const gap of uncovered(blocks, first, end)) {
    const builder = new IndexBuilder(BLOCK_OFFSETS);
    await readStream(
      deps.openChannel,
      deps.stream,
      gap.from,
      {
        max: Number.POSITIVE_INFINITY,
        until: gap.to,
        idleMs: Math.max(deps.idleMs, 5000),
        prefetch: SCAN_PREFETCH,
      },
      (r) => onRecord(r, builder),
    );
    for (const block of builder.finish()) await deps.appendIndex(encodeBlock(block)).catch(() => undefined);
  }
  // Every marker the index lists, first: a letter's state decides whether it is read at all.
  await readOffsets(
    deps.openChannel,
    deps.stream,
    [...marks].filter((o) => o >= first && o <= end),
    deps.idleMs,
    (r) => onRecord(r),
  );
  const states = new Map<number, LetterState>();
  // Markers in log order: the later marker of an offset wins.
  markers.sort((a, b) => a[0] - b[0]);
  for (const [, marker] of markers) for (const o of marker.offsets) states.set(o, marker.action);
  const stateOf = (o: number) => states.get(o) ?? 'dead';
  const wanted = [...candidates]
    .filter((o) => o >= first && o <= end && !found.has(o))
    .filter((o) => filter.state === undefined || stateOf(o) === filter.state)
    .sort((a, b) => a - b);
  // Read in offset order, a batch at a time, until the limit is met (a false entry is a read, never a match).
  const batch = Math.max(64, Math.min(2000, Number.isFinite(limit) ? limit * 2 : 2000));
  const selected = () =>
    [...found.keys()].filter((o) => filter.state === undefined || stateOf(o) === filter.state).length;
  for (let i = 0; i < wanted.length && selected() < limit; i += batch)
    await readOffsets(deps.openChannel, deps.stream, wanted.slice(i, i + batch), deps.idleMs, (r) =>
      onRecord(r),
    );
  const letters: IndexedLetter[] = [];
  let count = 0;
  for (const offset of [...found.keys()].sort((a, b) => a - b)) {
    const state = stateOf(offset);
    if (filter.state !== undefined && state !== filter.state) continue;
    count += 1;
    if (letters.length < limit) letters.push({ ...found.get(offset)!, state });
  }
  return { letters, count, upTo: end, records };
}
