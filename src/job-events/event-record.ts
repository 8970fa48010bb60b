/**
 * The live job events' record format (a contract: docs/guide/events.md). Messages on the namespace's
 * headers exchange `<namespace>.warren.events`, JSON, content type application/json, header `warren-event`
 * naming what the message is:
 * - `event`: `{ "v": 1, "kind", "jobId", "name", "queue", "attempt"?, "at": ms, "process", "seq", ... }`
 *   with headers `warren-job-id`, `warren-job-name`, `warren-queue` (the queue key) that a subscriber's
 *   binding matches. `seq` holds, for each filter of this event that someone subscribed to (`jobId`, `name`,
 *   `queue`), the number of events this process sent for that filter: a subscriber that sees it jump knows
 *   how many it missed. Per kind: `progress` (`progress`, or `isTruncated`), `completed` (`durationMs`,
 *   `result` or `isTruncated`), `failed` (`error`, `willRetry`), `retrying` (`error`, `delayMs`,
 *   `nextAttempt`), `dead` (`reason`, `error`), `cancelled` (`dueAt`?).
 * - `interest`: `{ "v": 1, "op": "interest" | "withdraw", "subscriber", "filter": { "jobId" | "name" |
 *   "queue": string }, "leaseMs", "t" }`: a subscriber's filter, renewed every third of its lease. A process
 *   sends events only for filters someone holds: with no subscriber, events cost a map lookup.
 * - `hello`: `{ "v": 1, "op": "hello", "process", "t" }`: a process that just (re)connected; subscribers
 *   answer with their interest at once.
 * Records carry `warren-proof` when a signing key is set (roles `job-events`, `event-interest`). A reader
 * skips and counts anything malformed, oversized or unproven; nothing a record says can crash it.
 */
import { parseJsonObject } from '../core';

export const EVENT_RECORD_VERSION = 1;
/** Records larger than this are not parsed (an event's values are capped far below it). */
export const MAX_EVENT_RECORD_BYTES = 1024 * 1024;
const MAX_TEXT = 10_000;
const SUBSCRIBER_ID = /^[0-9a-f]{16}$/;

/** What a live event tells; the same kinds as the history's (`ops.job`), a subset of them. */
export type LiveEventKind = 'progress' | 'completed' | 'failed' | 'retrying' | 'dead' | 'cancelled';
export const LIVE_EVENT_KINDS: readonly LiveEventKind[] = [
  'progress',
  'completed',
  'failed',
  'retrying',
  'dead',
  'cancelled',
];

/** What every live event carries. */
export interface LiveEventBase {
  readonly jobId: string;
  readonly name: string;
  /** The queue's key in the topology. */
  readonly queue: string;
  /** The attempt it happened in (1 for the first run); undefined for `cancelled`. */
  readonly attempt: number | undefined;
  /** When it happened, in the process that sent it. */
  readonly at: Date;
  /** The warren process id that sent it (`warren.processId`, as `ops.processes()` lists them). */
  readonly process: string;
}

/** One job event as a subscriber receives it. */
export type LiveJobEvent = LiveEventBase &
  (
    | {
        readonly kind: 'progress';
        /** The value the handler reported; undefined when larger than `events.maxValueBytes`. */
        readonly progress: unknown;
        readonly isTruncated: boolean;
      }
    | {
        readonly kind: 'completed';
        readonly durationMs: number;
        /** The handler's return value; undefined when larger than `events.maxValueBytes` (or not JSON). */
        readonly result: unknown;
        readonly isTruncated: boolean;
      }
    | {
        readonly kind: 'failed';
        /** The first line of the error. */
        readonly error: string;
        readonly willRetry: boolean;
      }
    | {
        readonly kind: 'retrying';
        readonly error: string;
        readonly delayMs: number;
        readonly nextAttempt: number;
      }
    | { readonly kind: 'dead'; readonly reason: string; readonly error: string }
    | { readonly kind: 'cancelled'; readonly dueAt: Date | undefined }
  );

/**
 * What a subscription tells besides events: `gap` (events of one process it missed: its queue was full
 * and the broker dropped the oldest, a reconnect, or the process could not send them), `reconnected`
 * (its connection came back after `downMs` and it subscribed again; what happened meanwhile is missed,
 * and counted by the `gap` of the next event of each process).
 */
export type SubscriptionNotice =
  | { readonly kind: 'gap'; readonly missed: number; readonly process: string }
  | { readonly kind: 'reconnected'; readonly downMs: number };

/** What a subscription yields: events, and notices of what it missed. */
export type SubscriptionMessage = LiveJobEvent | SubscriptionNotice;

/** What to follow: one job id, every job of one name, or every job of one queue (its topology key). */
export type EventFilter =
  | { readonly jobId: string; readonly name?: never; readonly queue?: never }
  | { readonly name: string; readonly jobId?: never; readonly queue?: never }
  | { readonly queue: string; readonly jobId?: never; readonly name?: never };

/** The filter's one field, as the interest and the seq name it. */
export type FilterField = 'jobId' | 'name' | 'queue';

export function filterField(filter: EventFilter): FilterField {
  return filter.jobId !== undefined ? 'jobId' : filter.name !== undefined ? 'name' : 'queue';
}

/** An event as sent: the wire form of a {@link LiveJobEvent}. */
export interface EventRecord {
  readonly v: typeof EVENT_RECORD_VERSION;
  readonly kind: LiveEventKind;
  readonly jobId: string;
  readonly name: string;
  readonly queue: string;
  readonly attempt?: number;
  readonly at: number;
  readonly process: string;
  readonly seq: Readonly<Partial<Record<FilterField, number>>>;
  readonly progress?: unknown;
  readonly result?: unknown;
  readonly isTruncated?: boolean;
  readonly durationMs?: number;
  readonly error?: string;
  readonly willRetry?: boolean;
  readonly delayMs?: number;
  readonly nextAttempt?: number;
  readonly reason?: string;
  readonly dueAt?: number;
}

export type InterestRecord =
  | {
      readonly v: typeof EVENT_RECORD_VERSION;
      readonly op: 'interest' | 'withdraw';
      readonly subscriber: string;
      readonly filter: Readonly<Partial<Record<FilterField, string>>>;
      readonly leaseMs: number;
      readonly t: number;
    }
  | {
      readonly v: typeof EVENT_RECORD_VERSION;
      readonly op: 'hello';
      readonly process: string;
      readonly t: number;
    };

function parseJson(content: Buffer): Record<string, unknown> | undefined {
  return parseJsonObject(content, MAX_EVENT_RECORD_BYTES);
}

const isText = (v: unknown): v is string => typeof v === 'string' && v.length <= MAX_TEXT;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isOptional = (v: unknown, check: (v: unknown) => boolean) => v === undefined || check(v);

/** A parsed event record: the event, and its sequence numbers by filter field. */
export interface ParsedEvent {
  readonly event: LiveJobEvent;
  readonly seq: Readonly<Partial<Record<FilterField, number>>>;
}

/** An event record back into what a subscriber yields, or undefined when any field is out of shape. */
export function parseEventRecord(content: Buffer): ParsedEvent | undefined {
  const r = parseJson(content);
  if (r === undefined || r.v !== EVENT_RECORD_VERSION) return undefined;
  const event = eventOf(r);
  const seq = r.seq as Record<string, unknown> | null;
  if (event === undefined || seq === null || typeof seq !== 'object') return undefined;
  const counts: Partial<Record<FilterField, number>> = {};
  for (const field of ['jobId', 'name', 'queue'] as const) {
    const value = seq[field];
    if (value === undefined) continue;
    if (!isCount(value)) return undefined;
    counts[field] = value;
  }
  return { event, seq: counts };
}

function eventOf(r: Record<string, unknown>): LiveJobEvent | undefined {
  if (typeof r.kind !== 'string' || !(LIVE_EVENT_KINDS as readonly string[]).includes(r.kind))
    return undefined;
  if (!isText(r.jobId) || !isText(r.name) || !isText(r.queue) || !isText(r.process)) return undefined;
  if (!isCount(r.at) || !isOptional(r.attempt, isCount)) return undefined;
  const base: LiveEventBase = {
    jobId: r.jobId,
    name: r.name,
    queue: r.queue,
    attempt: r.attempt as number | undefined,
    at: new Date(r.at),
    process: r.process,
  };
  const isTruncated = r.isTruncated === true;
  switch (r.kind as LiveEventKind) {
    case 'progress':
      return { ...base, kind: 'progress', progress: r.progress, isTruncated };
    case 'completed':
      if (!isCount(r.durationMs)) return undefined;
      return { ...base, kind: 'completed', durationMs: r.durationMs, result: r.result, isTruncated };
    case 'failed':
      if (!isText(r.error) || typeof r.willRetry !== 'boolean') return undefined;
      return { ...base, kind: 'failed', error: r.error, willRetry: r.willRetry };
    case 'retrying':
      if (!isText(r.error) || !isCount(r.delayMs) || !isCount(r.nextAttempt)) return undefined;
      return { ...base, kind: 'retrying', error: r.error, delayMs: r.delayMs, nextAttempt: r.nextAttempt };
    case 'dead':
      if (!isText(r.reason) || !isText(r.error)) return undefined;
      return { ...base, kind: 'dead', reason: r.reason, error: r.error };
    case 'cancelled':
      if (!isOptional(r.dueAt, isCount)) return undefined;
      return {
        ...base,
        kind: 'cancelled',
        dueAt: r.dueAt === undefined ? undefined : new Date(r.dueAt as number),
      };
  }
}

/** An interest or hello record, or undefined when out of shape. */
export function parseInterestRecord(content: Buffer): InterestRecord | undefined {
  const r = parseJson(content);
  if (r === undefined || r.v !== EVENT_RECORD_VERSION || !isCount(r.t)) return undefined;
  if (r.op === 'hello')
    return isText(r.process) ? { v: 1, op: 'hello', process: r.process, t: r.t } : undefined;
  if (r.op !== 'interest' && r.op !== 'withdraw') return undefined;
  if (typeof r.subscriber !== 'string' || !SUBSCRIBER_ID.test(r.subscriber)) return undefined;
  if (!isCount(r.leaseMs) || r.leaseMs < 1000 || r.leaseMs > 3_600_000) return undefined;
  const filter = r.filter as Record<string, unknown> | null;
  if (filter === null || typeof filter !== 'object') return undefined;
  const fields = Object.keys(filter);
  if (fields.length !== 1 || !['jobId', 'name', 'queue'].includes(fields[0]!)) return undefined;
  const value = filter[fields[0]!];
  if (!isText(value) || value.length === 0) return undefined;
  return {
    v: 1,
    op: r.op,
    subscriber: r.subscriber,
    filter: { [fields[0]!]: value },
    leaseMs: r.leaseMs,
    t: r.t,
  };
}
