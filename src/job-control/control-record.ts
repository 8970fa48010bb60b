/**
 * One record of the job-control stream (a contract: docs/guide/job-control.md). JSON, short
 * keys like the history's:
 * - `j` job id, `a` action, `t` when it was recorded (ms since epoch);
 * - `u` the new due time of a `reschedule` (ms since epoch);
 * - `c` the copy id of a `promote` or of a `reschedule` done through the stored copy: the delivery
 *   carrying `warren-control-copy: c` runs, any other delivery of the job is dropped;
 * - on `stored` (the copy a `controllable` publish keeps): `q` the destination queue, `b` the body
 *   (base64), `h` the headers and `p` the other AMQP properties;
 * - `mark`: a process appends one (`c` its own id) and reads until it sees it: then it has caught up.
 * - `debounce`: a debounced publish (`j` its debounce id, `debounce:<job>:<key>`): `c` the copy it sent,
 *   `u` when that copy is due, `f` when the burst it belongs to began (for `maxWaitMs`), `l` the last copy
 *   of the burst before (which still runs, though later records exist).
 * - `m` (never on the stream, only in a reader's state and its checkpoints): the newest `t` of every record
 *   of the id read up to this one, when that is later than its own `t` (see {@link placeRecord}).
 */
import { MAX_DELAY_MS, parseJsonObject } from '../core';

export type ControlAction = 'cancel' | 'reschedule' | 'promote' | 'stored' | 'mark' | 'debounce';

export interface ControlRecord {
  readonly j: string;
  readonly a: ControlAction;
  readonly t: number;
  readonly u?: number;
  readonly c?: string;
  readonly f?: number;
  readonly l?: string;
  readonly m?: number;
  readonly q?: string;
  readonly b?: string;
  readonly h?: Record<string, unknown>;
  readonly p?: Record<string, unknown>;
}

const ACTIONS: ReadonlySet<string> = new Set([
  'cancel',
  'reschedule',
  'promote',
  'stored',
  'mark',
  'debounce',
]);

/** A control record larger than this is skipped unread (a stored copy holds a job body: publisher.maxBodyBytes). */
export const MAX_CONTROL_RECORD_BYTES = 16 * 1024 ** 2;
/** The longest job or copy id a record may carry. */
export const MAX_ID_CHARS = 512;
/** How far ahead of this process's clock a record's time may be (clock skew between processes). */
const MAX_CLOCK_AHEAD_MS = 3_600_000;

/**
 * Undefined for a record that is not one of ours (the stream is writable by anyone on the vhost): its
 * shape, its bounds and its times (a record dated in the future would never be swept from memory).
 */
export function parseControlRecord(content: Buffer, now = Date.now()): ControlRecord | undefined {
  const record = parseJsonObject(content, MAX_CONTROL_RECORD_BYTES) as Partial<ControlRecord> | undefined;
  if (record === undefined) return undefined;
  if (typeof record.j !== 'string' || record.j.length > MAX_ID_CHARS) return undefined;
  if (typeof record.a !== 'string' || !ACTIONS.has(record.a)) return undefined;
  if (!isTime(record.t) || record.t > now + MAX_CLOCK_AHEAD_MS) return undefined;
  if (record.u !== undefined && (!isTime(record.u) || record.u > now + MAX_DELAY_MS + MAX_CLOCK_AHEAD_MS))
    return undefined;
  if (record.c !== undefined && (typeof record.c !== 'string' || record.c.length > MAX_ID_CHARS))
    return undefined;
  if (record.l !== undefined && (typeof record.l !== 'string' || record.l.length > MAX_ID_CHARS))
    return undefined;
  if (record.f !== undefined && (!isTime(record.f) || record.f > record.t)) return undefined;
  if (
    record.m !== undefined &&
    (!isTime(record.m) || record.m < record.t || record.m > now + MAX_CLOCK_AHEAD_MS)
  )
    return undefined;
  if (record.a === 'debounce' && (record.c === undefined || record.u === undefined || record.f === undefined))
    return undefined;
  if (record.a !== 'mark' && record.j.length === 0) return undefined;
  if (record.a === 'stored' && !isStoredCopy(record)) return undefined;
  return record as ControlRecord;
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isStoredCopy(record: Partial<ControlRecord>): boolean {
  const isTable = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  return typeof record.b === 'string' && isTable(record.h) && isTable(record.p);
}

/** What a worker does with a delayed job that came due: run it, drop it (cancelled), or wait this many ms. */
export type JobVerdict = 'run' | 'drop' | number;

/** A copy's id: the time its record was made, then a random part. */
export function copyId(at: number, random: string): string {
  return `${at}:${random}`;
}

/**
 * The latest decision on a job decides each of its deliveries. A copy newer than the latest record this
 * process has read runs: its record is on its way (the copy is published before its record, so that a
 * failure between the two runs the job twice rather than never).
 */
export function judge(record: ControlRecord | undefined, copy: unknown, now: number): JobVerdict {
  if (typeof copy === 'string') {
    if (record === undefined || record.c === copy) return 'run';
    return isNewerThanRead(copy, record) ? 'run' : 'drop';
  }
  if (record === undefined) return 'run';
  if (record.a === 'cancel') return 'drop';
  if (record.c !== undefined) return copy === record.c ? 'run' : 'drop';
  if (record.a === 'reschedule' && record.u !== undefined && record.u > now) return record.u - now;
  return 'run';
}

/**
 * A debounced copy runs if it is the latest of its debounce id, or the last of the burst before the latest
 * record's (`p`: a burst ended by `maxWaitMs` or by its quiet period, with later publishes already in a new
 * one), or newer than every record this process has read (its record is on its way); any other copy was
 * superseded, or cancelled (`warren.delayed.cancel(debounceId)`).
 */
export function judgeDebounced(record: ControlRecord | undefined, copy: unknown): 'run' | 'drop' {
  if (record === undefined) return 'run';
  if (typeof copy !== 'string') return 'drop';
  if (record.c === copy || record.l === copy) return 'run';
  return isNewerThanRead(copy, record) ? 'run' : 'drop';
}

/**
 * Whether a copy was made after every record of its id this process has read: its own record is then still
 * on its way. Against the newest time read, not the latest record's: two publishes racing can land on the
 * stream in the other order than their times, and the copy of the earlier-appended one, whose record was
 * read and superseded, would otherwise pass for newer than the latest and run beside it.
 */
function isNewerThanRead(copy: string, record: ControlRecord): boolean {
  return Number(copy.split(':')[0]) > (record.m ?? record.t);
}

/**
 * A decision as a reader keeps it, placed after `previous` (the id's decision before it on the stream): a
 * debounce record in its burst ({@link inBurst}), and `m`, the newest time of the two, when `previous` was
 * newer (a publisher's `m` is ignored).
 */
export function placeRecord(record: ControlRecord, previous: ControlRecord | undefined): ControlRecord {
  const { m: _forged, ...own } = record;
  const placed = own.a === 'debounce' ? inBurst(own, previous) : own;
  const newest = previous === undefined ? placed.t : Math.max(previous.m ?? previous.t, placed.t);
  return newest > placed.t ? { ...placed, m: newest } : placed;
}

/**
 * A debounce record placed in its burst by the stream's order, as every reader places it alike: it continues
 * the burst of `previous` (the latest record of its debounce id before it on the stream) while that record's
 * copy was not due yet when this one was published, else it opens a burst whose `l` is that copy. The
 * publisher wrote `f` and `l` from its own view of the stream, which lags under load: an older copy it named
 * as the last of a burst that in fact went on would run beside the real last one (measured: 10,000 updates
 * from 3 processes at load 18 ran an older payload before the final one).
 */
export function inBurst(record: ControlRecord, previous: ControlRecord | undefined): ControlRecord {
  const isOpen = previous?.a === 'debounce' && previous.u !== undefined && previous.u > record.t;
  const f = isOpen ? (previous.f ?? record.t) : record.t;
  const l = isOpen ? previous.l : previous?.a === 'debounce' ? previous.c : undefined;
  const { l: _claimed, ...rest } = record;
  return { ...rest, f, ...(l !== undefined ? { l } : {}) };
}
