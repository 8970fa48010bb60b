/**
 * The dead-letter log's record format (a contract: README, "Dead-letter log"). Every record is one stream
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

export function markerMessage(marker: Marker): { content: Buffer; properties: amqp.Options.Publish } {
  return {
    content: Buffer.from(JSON.stringify(marker), 'utf8'),
    properties: {
      headers: { [HEADERS.logKind]: 'marker' },
      contentType: 'application/json',
      persistent: true,
    },
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
    try {
      return { kind, offset, marker: JSON.parse(content.toString('utf8')) as Marker };
    } catch {
      return undefined;
    }
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
  const error = (lastError as string).split('\n', 1)[0] || undefined;
  const errorClass = error?.match(/^([A-Za-z_$][\w$.]*)(?::|$)/)?.[1];
  let data: unknown;
  try {
    data = JSON.parse(content.toString('utf8'));
  } catch {
    data = content.toString('utf8');
  }
  return {
    offset,
    jobId: typeof properties.messageId === 'string' ? properties.messageId : undefined,
    name: typeof properties.type === 'string' ? properties.type : undefined,
    queue: String(headers[HEADERS.queue] ?? ''),
    reason: String(headers[HEADERS.deadReason] ?? 'unknown'),
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

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}
