/**
 * The job history's record format (a contract: docs/operating/cli.md). One stream record is a batch:
 * JSON `{ "p": processId, "h": host, "pid": n, "e": [event, ...] }`, each event
 * `{ "j": jobId, "n": name, "q": queue, "k": kind, "t": ms, "a"?: attempt, "d"?: durationMs,
 *    "u"?: runAt ms, "r"?: dead reason, "x"?: first line of the error, "g"?: progress value,
 *    "b"?: payload text, "bn"?: its full size, "o"?: result JSON text, "on"?: its full size }`.
 * `b` (on completed, retrying, dead): the message body as UTF-8 text, its first `history.maxPayloadBytes`
 * bytes, and `bn` the body's size in bytes only when it was cut; `o` (on completed): the handler's result
 * as JSON, its first `history.maxResultBytes` bytes, `on` likewise. Cut at a character's boundary.
 * Short keys: a batch holds up to a thousand events and is read back whole.
 */
import { MAX_HISTORY_VALUE_BYTES } from './options';

export type HistoryKind =
  | 'published'
  | 'started'
  | 'progress'
  | 'completed'
  | 'retrying'
  | 'failed'
  | 'dead'
  /**
   * A delayed job was cancelled (recorded at the call, by a process with history on) or its held message
   * came due after a cancel and was dropped (docs/guide/job-control.md).
   */
  | 'cancelled';

export interface HistoryEvent {
  readonly j: string;
  readonly n: string;
  readonly q: string;
  readonly k: HistoryKind;
  readonly t: number;
  readonly a?: number;
  readonly d?: number;
  readonly u?: number;
  readonly r?: string;
  readonly x?: string;
  readonly g?: unknown;
  readonly b?: string;
  readonly bn?: number;
  readonly o?: string;
  readonly on?: number;
}

export interface HistoryBatch {
  readonly p: string;
  readonly h: string;
  readonly pid: number;
  readonly e: readonly HistoryEvent[];
}

/** One event as `ops.job(id)` lists it. */
export interface JobEvent {
  readonly kind: HistoryKind;
  readonly at: Date;
  readonly name: string;
  readonly queue: string;
  readonly attempt?: number;
  readonly durationMs?: number;
  /** For `published` (delayed) and `retrying`: when it runs next. */
  readonly runAt?: Date;
  readonly reason?: string;
  readonly error?: string;
  /** For `progress`: the value the handler reported. */
  readonly progress?: unknown;
  /**
   * For `completed`, `retrying` and `dead`, when the writer keeps payloads (`history.payloads`): the job's
   * message body as text (its payload's JSON), whole, or its first `history.maxPayloadBytes` bytes when
   * `payloadBytes` is set.
   */
  readonly payload?: string;
  /** The body's full size, bytes: set only when `payload` holds its first bytes alone. */
  readonly payloadBytes?: number;
  /**
   * For `completed`, when the writer keeps results (`history.results`) and the handler returned a JSON
   * value: that value as JSON text, whole, or its first `history.maxResultBytes` bytes when `resultBytes`
   * is set. Parse it with `JSON.parse` when `resultBytes` is not set.
   */
  readonly result?: string;
  /** The result's JSON full size, bytes: set only when `result` holds its first bytes alone. */
  readonly resultBytes?: number;
  /** The process that recorded it: `host:pid` and its warren process id. */
  readonly process: string;
  readonly processId: string;
}

/** Where a job is now, from its last event. */
export type JobState =
  | 'unknown'
  | 'waiting'
  | 'delayed'
  | 'running'
  | 'completed'
  | 'retrying'
  | 'dead'
  | 'cancelled';

export interface JobStatus {
  readonly jobId: string;
  readonly state: JobState;
  /** Every event of the job the history still holds, oldest first. */
  readonly events: readonly JobEvent[];
  /** The last event, which decides the state. */
  readonly last: JobEvent | undefined;
  /** The last progress the handler reported (`ctx.progress`), of any attempt; undefined if none. */
  readonly progress?: unknown;
}

export function firstLine(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.split('\n', 1)[0]!.slice(0, 200);
}

/** The state a job's events (oldest first) say it is in at `now`. */
export function jobStatus(jobId: string, events: readonly JobEvent[], now: number): JobStatus {
  const last = events[events.length - 1];
  let state: JobState = 'unknown';
  if (last) {
    if (last.kind === 'published') state = last.runAt && last.runAt.getTime() > now ? 'delayed' : 'waiting';
    else if (last.kind === 'started' || last.kind === 'progress') state = 'running';
    else if (last.kind === 'completed') state = 'completed';
    else if (last.kind === 'retrying') state = 'retrying';
    else if (last.kind === 'dead') state = 'dead';
    else if (last.kind === 'cancelled') state = 'cancelled';
    else state = 'running'; // `failed` is followed at once by `retrying` or `dead`
  }
  let reported: JobEvent | undefined;
  for (const e of events) if (e.kind === 'progress') reported = e;
  return { jobId, state, events, last, ...(reported ? { progress: reported.progress } : {}) };
}

/**
 * A batch is cut once its events weigh about this much as JSON, bytes: below V8's large-object size (128
 * KiB), above which the batch's JSON string and its Buffer are mapped and unmapped on every flush (measured:
 * batches of 1,000 events with 120-byte payloads, 270 kB, cost 2.2 µs of CPU an event more than batches of
 * 400, half of it system time). Even if every kept character were escaped 6-fold, a batch stays far below
 * what a reader parses (16 MiB) and RabbitMQ 4's largest message (16 MiB).
 */
export const MAX_BATCH_WEIGHT = 96 * 1024;

/** About what an event takes in its batch's JSON, bytes: its fixed fields, and its kept payload and result. */
export function eventWeight(event: HistoryEvent): number {
  return 128 + (event.b?.length ?? 0) + (event.o?.length ?? 0);
}

/** Text of at most `maxBytes` bytes of UTF-8: whole, or cut at the last character that fits. */
function cutUtf8(bytes: Buffer, maxBytes: number): string {
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.toString('utf8', 0, end);
}

/** An event's payload fields: the body's bytes as text (never serialized again), cut to `maxBytes`. */
export function keptPayload(body: Buffer | undefined, maxBytes: number): { b?: string; bn?: number } {
  if (body === undefined) return {};
  if (body.length <= maxBytes) return { b: body.toString('utf8') };
  return { b: cutUtf8(body, maxBytes), bn: body.length };
}

/** An event's result fields: the result's JSON, cut to `maxBytes`; none for undefined or a value JSON refuses. */
export function keptResult(result: unknown, maxBytes: number): { o?: string; on?: number } {
  if (result === undefined) return {};
  let json: string | undefined;
  try {
    json = JSON.stringify(result);
  } catch {
    return {};
  }
  if (json === undefined) return {};
  // a string of n UTF-16 units is at most 3n bytes: most results need no count
  if (json.length * 3 <= maxBytes) return { o: json };
  const bytes = Buffer.from(json);
  if (bytes.length <= maxBytes) return { o: json };
  return { o: cutUtf8(bytes, maxBytes), on: bytes.length };
}

/** The payload and result of an event as `ops.job(id)` and `ops.recentJobs` show them. */
export function keptContents(
  e: HistoryEvent,
): Pick<JobEvent, 'payload' | 'payloadBytes' | 'result' | 'resultBytes'> {
  return {
    ...(e.b !== undefined ? { payload: e.b } : {}),
    ...(e.bn !== undefined ? { payloadBytes: e.bn } : {}),
    ...(e.o !== undefined ? { result: e.o } : {}),
    ...(e.on !== undefined ? { resultBytes: e.on } : {}),
  };
}

/**
 * A record's payload and result fields, each of its type and bound (a text the writer could have kept, a
 * size that is a byte count): a forged one makes the event skipped, never shown.
 */
export function hasValidContents(event: Record<string, unknown>): boolean {
  const isValue = (v: unknown) =>
    v === undefined || (typeof v === 'string' && v.length <= MAX_HISTORY_VALUE_BYTES);
  const isSize = (v: unknown) => v === undefined || (Number.isSafeInteger(v) && (v as number) >= 0);
  return isValue(event.b) && isValue(event.o) && isSize(event.bn) && isSize(event.on);
}
