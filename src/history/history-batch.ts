import { parseJsonObject } from '../core';
import {
  hasValidContents,
  keptContents,
  type HistoryBatch,
  type HistoryEvent,
  type HistoryKind,
  type JobEvent,
} from './history-event';

/** A history batch larger than this is not parsed (a writer's batches are far below it). */
const MAX_BATCH_BYTES = 16 * 1024 ** 2;
const MAX_TEXT = 10_000;

/** The order of a job's lifecycle, for events recorded at the same millisecond. */
export const RANK: Readonly<Record<HistoryKind, number>> = {
  published: 0,
  started: 1,
  progress: 1,
  failed: 2,
  retrying: 3,
  completed: 4,
  dead: 4,
  cancelled: 4,
};

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
