/**
 * What a checkpoint of the history's index holds beside `upTo` (history-index.ts), the limits a round keeps
 * the index within, and the pure helpers both the lookups and the rounds use.
 */
import type * as amqp from 'amqplib';
import type { Checkpoint, RecordTrust } from '../records';
import { MAX_INDEX_SHARDS } from '../streams';

/** A delta block covers at most this many history offsets (batches), and holds at most this many entries. */
export const DELTA_BLOCK = { offsets: 1024, maxEntries: 20_000 };
/** The deltas are compacted into a new base past this many entries (8 bytes each)... */
export const COMPACT_ENTRIES = 65_536;
/** ...or this many delta blocks. */
export const COMPACT_DELTAS = 128;
/** A base shard holds about this many entries (a lookup reads one shard: ~32 kB). */
export const SHARD_ENTRIES = 4096;
/** What a checkpoint of the history's index says beside `upTo`. */
export interface IndexState {
  /** The compacted base: `n` shards at index offsets given as runs `[first offset, count]`, covering `from..to`. */
  readonly base?: {
    readonly n: number;
    readonly runs: readonly (readonly [number, number])[];
    readonly from: number;
    readonly to: number;
  };
  /** The delta blocks since the base: `[index offset, from, to, entries]`. */
  readonly deltas: readonly (readonly [number, number, number, number])[];
}

/** A checkpoint that claims more than the stream holds: written before it was deleted and declared again. */
export function isStale(cp: Checkpoint, end: number): boolean {
  return cp.upTo > end + 1;
}

/** Each job id a batch holds events of, once. */
export function jobIdsOf(batch: { readonly e: readonly unknown[] }): string[] {
  const jobs = new Set<string>();
  for (const e of batch.e)
    if (e !== null && typeof e === 'object' && typeof (e as { j?: unknown }).j === 'string')
      jobs.add((e as { j: string }).j);
  return [...jobs];
}

/**
 * The history index's key of a job id: FNV-1a (32 bits) over its UTF-16 code units. Not SHA-256 like the
 * dead-letter log's: the writer hashes every batch's ids on the job path (~50 ns an id, against ~2.4 µs),
 * and a hash here only ever costs a read when two ids share it; every answer is the real record's.
 */
export function historyKeyHash(jobId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < jobId.length; i += 1) {
    h ^= jobId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A batch's `warren-index-keys` header is left out past this many ids (it must fit in one AMQP frame). */
export const MAX_HEADER_KEYS = 8192;

/** The `warren-index-keys` header of a batch: its distinct job ids' hashes, u32 big-endian, in base64. */
export function encodeKeyHashes(jobIds: Iterable<string>): string | undefined {
  const hashes = new Set<number>();
  for (const id of jobIds) hashes.add(historyKeyHash(id));
  if (hashes.size > MAX_HEADER_KEYS) return undefined;
  const out = Buffer.allocUnsafe(hashes.size * 4);
  let at = 0;
  for (const h of hashes) {
    out.writeUInt32BE(h, at);
    at += 4;
  }
  return out.toString('base64');
}

/** The hashes a `warren-index-keys` header holds; undefined when it is missing or not one. */
export function decodeKeyHashes(header: unknown): number[] | undefined {
  if (typeof header !== 'string' || header.length > ((MAX_HEADER_KEYS * 4 + 2) / 3) * 4 + 4) return undefined;
  const bytes = Buffer.from(header, 'base64');
  if (bytes.length % 4 !== 0) return undefined;
  const hashes: number[] = [];
  for (let at = 0; at < bytes.length; at += 4) hashes.push(bytes.readUInt32BE(at));
  return hashes;
}

/** Shards for a base of this many entries: a power of two, about SHARD_ENTRIES each. */
export function shardCount(entries: number): number {
  let n = 1;
  while (n < MAX_INDEX_SHARDS && entries / n > SHARD_ENTRIES) n *= 2;
  return n;
}

export function toRuns(offsets: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const o of offsets) {
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === o) last[1] += 1;
    else runs.push([o, 1]);
  }
  return runs;
}

export function expandRuns(runs: readonly (readonly [number, number])[]): number[] {
  const out: number[] = [];
  for (const [o, n] of runs) for (let i = 0; i < n; i += 1) out.push(o + i);
  return out;
}

/** The index offset of shard `index` (the runs list the shards in order). */
export function shardOffset(runs: readonly (readonly [number, number])[], index: number): number | undefined {
  let left = index;
  for (const [o, n] of runs) {
    if (left < n) return o + left;
    left -= n;
  }
  return undefined;
}

const isOffset = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/** A checkpoint's state, its shape and bounds checked; undefined when it is not one. */
export function parseIndexState(raw: unknown): IndexState | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const s = raw as { base?: unknown; deltas?: unknown };
  if (!Array.isArray(s.deltas) || s.deltas.length > COMPACT_DELTAS * 8) return undefined;
  const deltas: [number, number, number, number][] = [];
  for (const d of s.deltas) {
    if (!Array.isArray(d) || d.length !== 4 || !d.every(isOffset) || d[2] < d[1]) return undefined;
    deltas.push([d[0], d[1], d[2], d[3]]);
  }
  if (s.base === undefined) return { deltas };
  const b = s.base as { n?: unknown; runs?: unknown; from?: unknown; to?: unknown };
  if (!Number.isSafeInteger(b.n) || (b.n as number) < 1 || (b.n as number) > MAX_INDEX_SHARDS)
    return undefined;
  if (!isOffset(b.from) || !isOffset(b.to) || b.to < b.from || !Array.isArray(b.runs)) return undefined;
  const runs: [number, number][] = [];
  let total = 0;
  for (const r of b.runs) {
    if (!Array.isArray(r) || r.length !== 2 || !isOffset(r[0]) || !isOffset(r[1]) || r[1] < 1)
      return undefined;
    runs.push([r[0], r[1]]);
    total += r[1];
  }
  if (total !== b.n) return undefined;
  return { base: { n: b.n as number, runs, from: b.from, to: b.to }, deltas };
}

/** Appends one record to a stream, confirmed; `userId` is the connection's user when known. */
export type AppendRecord = (message: {
  readonly stream: string;
  readonly content: Buffer;
  readonly contentType: string;
  readonly headers: Record<string, string>;
  readonly userId?: string;
}) => Promise<void>;

export interface HistoryIndexDeps {
  readonly openChannel: () => Promise<amqp.Channel>;
  /** The history stream. */
  readonly stream: string;
  readonly indexStream: string;
  readonly checkpointStream: string;
  readonly idleMs: number;
  readonly trust: RecordTrust;
  /** The broker user of this process's connection, when known (EXTERNAL authentication: not). */
  readonly username: () => string | undefined;
  readonly append: AppendRecord;
  /** Declares the index and checkpoint streams (before this process's first append to them). */
  readonly declareStreams: () => Promise<void>;
}
