/**
 * An aggregate record (a contract: docs/guide/aggregates.md). One stream record per process per bucket
 * (or hour, or day), JSON, signed as role `aggregates` with the level as the signed extra, so a record
 * copied from one level's stream into another's fails its proof:
 * `{ v: 1, p: process id, h: host, s: bucket start ms, l: bucket length ms, q: { <queue key>: counts } }`
 * where counts are `c` completed, `f` failed attempts, `r` retried, `d` dead-lettered, `w` wait and `x`
 * run time histograms (sparse bins, latency-histogram.ts), `n` messages ready when the bucket closed and
 * `o` the oldest waiting job then, ms (both optional: the broker may not have answered).
 */
import { MAX_BIN, type SparseBins } from './latency-histogram';

export interface QueueCounts {
  readonly c: number;
  readonly f: number;
  readonly r: number;
  readonly d: number;
  readonly w: SparseBins;
  readonly x: SparseBins;
  readonly n?: number;
  readonly o?: number;
}

export interface AggregateRecord {
  readonly v: 1;
  readonly p: string;
  readonly h: string;
  readonly s: number;
  readonly l: number;
  readonly q: Readonly<Record<string, QueueCounts>>;
}

/** A record's body is refused above this size (a process with thousands of queues stays far below). */
export const MAX_RECORD_BYTES = 4 * 1024 ** 2;
const MAX_QUEUES = 10_000;
const MAX_TEXT = 200;

export function encodeAggregate(record: AggregateRecord): Buffer {
  return Buffer.from(JSON.stringify(record));
}

/** Why a record was refused; the reader counts it (records/record-trust.ts). */
export type AggregateRefusal = 'malformed' | 'too-large';

/** A record read back, checked field by field: anything else is refused, never half-applied. */
export function decodeAggregate(body: Buffer): AggregateRecord | AggregateRefusal {
  if (body.length > MAX_RECORD_BYTES) return 'too-large';
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return 'malformed';
  }
  if (!isObject(value) || value.v !== 1) return 'malformed';
  const { p, h, s, l, q } = value;
  if (!isText(p) || !isText(h) || !isCount(s) || !isCount(l) || l === 0 || s % l !== 0) return 'malformed';
  if (!isObject(q)) return 'malformed';
  const keys = Object.keys(q);
  if (keys.length > MAX_QUEUES) return 'too-large';
  const queues: Record<string, QueueCounts> = Object.create(null);
  for (const key of keys) {
    const counts = queueCounts(q[key]);
    if (key.length === 0 || key.length > MAX_TEXT || counts === undefined) return 'malformed';
    queues[key] = counts;
  }
  return { v: 1, p, h, s, l, q: queues };
}

function queueCounts(value: unknown): QueueCounts | undefined {
  if (!isObject(value)) return undefined;
  const { c, f, r, d, w, x, n, o } = value;
  if (!isCount(c) || !isCount(f) || !isCount(r) || !isCount(d)) return undefined;
  if (!isBins(w) || !isBins(x)) return undefined;
  if ((n !== undefined && !isCount(n)) || (o !== undefined && !isCount(o))) return undefined;
  return { c, f, r, d, w, x, ...(n !== undefined ? { n } : {}), ...(o !== undefined ? { o } : {}) };
}

function isBins(value: unknown): value is SparseBins {
  if (!Array.isArray(value) || value.length > MAX_BIN + 1) return false;
  let last = -1;
  for (const pair of value) {
    if (!Array.isArray(pair) || pair.length !== 2) return false;
    const [bin, n] = pair as unknown[];
    if (!isCount(bin) || bin > MAX_BIN || bin <= last || !isCount(n) || n === 0) return false;
    last = bin;
  }
  return true;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_TEXT;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
