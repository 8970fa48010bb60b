/**
 * The dead-letter log's record format (a contract: docs/guide/dead-letters.md). Every record is one stream
 * message with header `warren-log-kind`:
 *
 * - `letter`: a dead letter as it left its parking queue: the job's body untouched, its properties and
 *   headers (`warren-dead-reason`, `warren-last-error`, `warren-dead-at`, `warren-queue`, `warren-attempt`).
 *   A letter the broker dead-lettered (TTL, length, delivery limit) gets warren's headers from its
 *   `x-death` when it is moved into the log; the broker's death headers themselves are not kept.
 * - `marker`: JSON `{ "action": "replayed" | "purged", "offsets": [..], "at": ms, "to"?: queueKey }`,
 *   appended once the action is done (for a replay: after every republish in it was confirmed). The log
 *   is append-only: a letter's state is the last marker naming its offset.
 */
import type * as amqp from 'amqplib';
import { HEADERS, republishProperties } from '../message';
import type { RecordTrust } from '../records';
import { parseJsonObject } from '../core';

export type MarkerAction = 'replayed' | 'purged';

export interface Marker {
  readonly action: MarkerAction;
  readonly offsets: readonly number[];
  readonly at: number;
  readonly to?: string;
}

export type LogRecord =
  | { readonly kind: 'letter'; readonly offset: number; readonly letter: LoggedLetter }
  | { readonly kind: 'marker'; readonly offset: number; readonly marker: Marker };

/** A dead letter as the log holds it. */
export interface LoggedLetter {
  readonly offset: number;
  readonly jobId: string | undefined;
  readonly name: string | undefined;
  /** The job queue's key. */
  readonly queue: string;
  /** warren's reason or the broker's (`expired`, `maxlen`, `delivery-limit`, `rejected`). */
  readonly reason: string;
  /** First line of the last error, e.g. `TypeError: x is undefined`. */
  readonly error: string | undefined;
  /** The error's class as its first line names it (`TypeError`), if it does. */
  readonly errorClass: string | undefined;
  readonly attempt: number | undefined;
  readonly deadAt: number;
  /** Offset of the letter this job was replayed from, when it died again after a replay. */
  readonly replayOf: number | undefined;
  readonly data: unknown;
}

const BROKER_REASONS: Record<string, string> = {
  expired: 'expired',
  maxlen: 'maxlen',
  delivery_limit: 'delivery-limit',
  rejected: 'rejected',
};

/**
 * Properties for a parking-queue message appended to the log: warren's headers filled from the broker's
 * death record where warren did not write them.
 */
export function letterProperties(message: amqp.Message, queueKey: string, now: number): amqp.Options.Publish {
  const headers = (message.properties.headers ?? {}) as Record<string, unknown>;
  const brokerReason = headers['x-first-death-reason'];
  const changes: Record<string, unknown> = { [HEADERS.logKind]: 'letter' };
  if (typeof headers[HEADERS.queue] !== 'string') changes[HEADERS.queue] = queueKey;
  if (typeof headers[HEADERS.deadReason] !== 'string')
    changes[HEADERS.deadReason] =
      typeof brokerReason === 'string' ? (BROKER_REASONS[brokerReason] ?? brokerReason) : 'unknown';
  if (typeof headers[HEADERS.deadAt] !== 'number') changes[HEADERS.deadAt] = now;
  return republishProperties(message.properties, changes);
}

export function markerMessage(
  marker: Marker,
  trust: RecordTrust,
): { content: Buffer; properties: amqp.Options.Publish } {
  const content = Buffer.from(JSON.stringify(marker), 'utf8');
  return {
    content,
    properties: {
      headers: { [HEADERS.logKind]: 'marker', ...trust.proof('dead-letter-log', content, 'marker') },
      contentType: 'application/json',
      persistent: true,
    },
  };
}

/** The headers a letter's fields come from, in the order its proof signs them. */
const SIGNED_LETTER_HEADERS = [
  HEADERS.logKind,
  HEADERS.queue,
  HEADERS.deadReason,
  HEADERS.lastError,
  HEADERS.attempt,
  HEADERS.deadAt,
  HEADERS.replayOf,
] as const;

/**
 * What a record's proof signs beside its body: for a letter, its job id, name and the warren headers
 * the log shows (a copy with other headers is another record); for a marker, its kind.
 */
export function signedFields(properties: {
  readonly messageId?: unknown;
  readonly type?: unknown;
  readonly headers?: Record<string, unknown> | undefined;
}): string {
  const headers = properties.headers ?? {};
  if (headers[HEADERS.logKind] === 'marker') return 'marker';
  const fields = [properties.messageId, properties.type, ...SIGNED_LETTER_HEADERS.map((h) => headers[h])];
  return JSON.stringify(fields.map(plainField));
}

function plainField(value: unknown): string | number | boolean | null {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return null;
}

/** Markers naming more offsets than this are not warren's (it writes at most 5000 a marker). */
export const MAX_MARKER_OFFSETS = 5000;
const MARKER_ACTIONS: ReadonlySet<string> = new Set(['replayed', 'purged']);

/** A marker's shape and bounds: undefined for anything else (`{ offsets: 7 }` once hung every search). */
export function parseMarker(content: Buffer): Marker | undefined {
  const m = parseJsonObject(content, 1024 ** 2);
  if (m === undefined) return undefined;
  if (typeof m.action !== 'string' || !MARKER_ACTIONS.has(m.action)) return undefined;
  if (!Array.isArray(m.offsets) || m.offsets.length > MAX_MARKER_OFFSETS) return undefined;
  if (!m.offsets.every((o) => Number.isSafeInteger(o) && (o as number) >= 0)) return undefined;
  if (typeof m.at !== 'number' || (m.to !== undefined && typeof m.to !== 'string')) return undefined;
  return {
    action: m.action as MarkerAction,
    offsets: m.offsets as number[],
    at: m.at,
    ...(m.to !== undefined ? { to: m.to as string } : {}),
  };
}

/** A stream record as a letter or a marker; undefined for a record warren did not write. */
export function decodeRecord(
  offset: number,
  content: Buffer,
  properties: amqp.MessageProperties,
): LogRecord | undefined {
  const headers = (properties.headers ?? {}) as Record<string, unknown>;
  const kind = headers[HEADERS.logKind];
  if (kind === 'marker') {
    const marker = parseMarker(content);
    return marker === undefined ? undefined : { kind, offset, marker };
  }
  if (kind !== 'letter') return undefined;
  return { kind, offset, letter: decodeLetter(offset, content, properties, headers) };
}

function decodeLetter(
  offset: number,
  content: Buffer,
  properties: amqp.MessageProperties,
  headers: Record<string, unknown>,
): LoggedLetter {
  const lastError = typeof headers[HEADERS.lastError] === 'string' ? headers[HEADERS.lastError] : '';
  const error = capped((lastError as string).split('\n', 1)[0]) || undefined;
  const errorClass = error?.match(/^([A-Za-z_$][\w$.]*)(?::|$)/)?.[1];
  let data: unknown;
  try {
    data = JSON.parse(content.toString('utf8'));
  } catch {
    data = content.toString('utf8');
  }
  return {
    offset,
    jobId: typeof properties.messageId === 'string' ? capped(properties.messageId) : undefined,
    name: typeof properties.type === 'string' ? capped(properties.type) : undefined,
    queue: capped(String(headers[HEADERS.queue] ?? '')),
    reason: capped(String(headers[HEADERS.deadReason] ?? 'unknown')),
    error,
    errorClass,
    attempt: numberOr(headers[HEADERS.attempt]),
    deadAt: numberOr(headers[HEADERS.deadAt]) ?? 0,
    replayOf: numberOr(headers[HEADERS.replayOf]),
    data,
  };
}

/** What only the record itself holds of a letter: its headers and its last error in full (with the stack). */
export interface LetterDetail {
  /** Every header of the record, each value as text, number or boolean (tables and arrays as JSON). */
  readonly headers: Readonly<Record<string, string | number | boolean | null>>;
  /** `warren-last-error` as warren wrote it: name, message and stack (length-capped when it died). */
  readonly lastError: string | undefined;
}

export function letterDetail(properties: amqp.MessageProperties): LetterDetail {
  const raw = (properties.headers ?? {}) as Record<string, unknown>;
  const headers: Record<string, string | number | boolean | null> = {};
  for (const [key, value] of Object.entries(raw)) headers[key] = plainHeader(value);
  const lastError = raw[HEADERS.lastError];
  return { headers, lastError: typeof lastError === 'string' ? lastError : undefined };
}

function plainHeader(value: unknown): string | number | boolean | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return JSON.stringify(value) ?? String(value);
}

/** The index keeps this much of each text field of a letter (a forged one may carry 64 KiB in each). */
const MAX_FIELD_CHARS = 500;

function capped(text: string | undefined): string {
  return text === undefined ? '' : text.length > MAX_FIELD_CHARS ? text.slice(0, MAX_FIELD_CHARS) : text;
}

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}
