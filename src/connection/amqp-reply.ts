/**
 * The one place warren reads what the broker or amqplib said when it closed a channel or refused an
 * operation. amqplib gives the AMQP reply code (`error.code`, AMQP 0-9-1 §1.3 "constants") for a close, and
 * for everything else only text; STYLE.md's rule (check errors by code, never by text) has its one
 * exception here: where the code does not say enough (which exchange is missing, which message a 406 was
 * about, a consumer timeout, a nack) this file reads the text, so that no other file does.
 */

/** The AMQP 0-9-1 reply codes a broker closes a channel or connection with. */
export const AMQP_REPLY_CODES = {
  CONTENT_TOO_LARGE: 311,
  NO_ROUTE: 312,
  NO_CONSUMERS: 313,
  CONNECTION_FORCED: 320,
  INVALID_PATH: 402,
  ACCESS_REFUSED: 403,
  NOT_FOUND: 404,
  RESOURCE_LOCKED: 405,
  PRECONDITION_FAILED: 406,
  FRAME_ERROR: 501,
  SYNTAX_ERROR: 502,
  COMMAND_INVALID: 503,
  CHANNEL_ERROR: 504,
  UNEXPECTED_FRAME: 505,
  RESOURCE_ERROR: 506,
  NOT_ALLOWED: 530,
  NOT_IMPLEMENTED: 540,
  INTERNAL_ERROR: 541,
} as const;

/** The name of an AMQP reply code (`NOT_FOUND` for 404). */
export type AmqpReplyKind = keyof typeof AMQP_REPLY_CODES;

/** What the broker replied: its code, the code's name and the broker's text. */
export interface AmqpReply {
  readonly code: number;
  /** Undefined for a code outside AMQP 0-9-1's list. */
  readonly kind: AmqpReplyKind | undefined;
  readonly text: string;
}

const KIND_OF_CODE = new Map<number, AmqpReplyKind>(
  Object.entries(AMQP_REPLY_CODES).map(([kind, code]) => [code, kind as AmqpReplyKind]),
);

/** The broker's reply an error carries (amqplib puts it on channel and connection closes), if any. */
export function amqpReplyOf(error: unknown): AmqpReply | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (typeof code !== 'number') return undefined;
  const text = (error as { message?: unknown }).message;
  return { code, kind: KIND_OF_CODE.get(code), text: typeof text === 'string' ? text : '' };
}

/** True when the error is the broker's reply of this kind (`isAmqpReply(error, 'NOT_FOUND')`). */
export function isAmqpReply(error: unknown, kind: AmqpReplyKind): boolean {
  return (error as { code?: unknown } | null | undefined)?.code === AMQP_REPLY_CODES[kind];
}

/** amqplib's confirm callback error for a basic.nack (its only sign is the text). */
export function isNack(error: unknown): boolean {
  return (error as { message?: unknown } | null | undefined)?.message === 'message nacked';
}

/** The exchange a 404 close names (`NOT_FOUND - no exchange 'x' in vhost '/'`), if it names one. */
export function missingExchangeOf(error: unknown): string | undefined {
  if (!isAmqpReply(error, 'NOT_FOUND')) return undefined;
  return /no exchange '([^']*)'/.exec((error as Error).message ?? '')?.[1];
}

/** True for the 406 a broker closes a consumer's channel with when a delivery was not acked in time. */
export function isConsumerTimeout(error: unknown): boolean {
  const text = (error as { message?: unknown } | null | undefined)?.message;
  return typeof text === 'string' && text.includes('delivery acknowledgement') && text.includes('timed out');
}

/**
 * True for the 406 RabbitMQ 3.10 closes a stream consumer's channel with while the stream's replica on the
 * node is still starting (`... does not have a replica on the local node`): another connection is creating
 * the stream at that moment.
 */
export function isStreamStarting(error: unknown): boolean {
  const text = (error as { message?: unknown } | null | undefined)?.message;
  return (
    isAmqpReply(error, 'PRECONDITION_FAILED') &&
    typeof text === 'string' &&
    text.includes('does not have a replica on the local node')
  );
}

/** What the text of a refusal close (406, 403) says about the message it refused. */
export interface RefusalDetails {
  /** `ACCESS_REFUSED - write access to exchange 'x' ...`: the exchange written to. */
  readonly exchange?: string;
  /** `PRECONDITION_FAILED - user_id property set to 'bob' ...`: the message's `userId`. */
  readonly userId?: string;
  /** `PRECONDITION_FAILED - message size 5000 is larger than configured max size 4096`. */
  readonly messageBytes?: number;
  readonly maxMessageBytes?: number;
}

/** Reads a refusal close's text (RabbitMQ 3.10+ wording) for the message it names. */
export function refusalDetailsOf(error: Error): RefusalDetails {
  const text = error.message;
  const exchange = /access to exchange '([^']*)'/.exec(text)?.[1];
  const userId = /user_id property set to '([^']*)'/.exec(text)?.[1];
  const size = /message size (\d+) is larger than/.exec(text)?.[1];
  const max = /larger than configured max size (\d+)/.exec(text)?.[1];
  return {
    ...(exchange !== undefined ? { exchange } : {}),
    ...(userId !== undefined ? { userId } : {}),
    ...(size !== undefined ? { messageBytes: Number(size) } : {}),
    ...(max !== undefined ? { maxMessageBytes: Number(max) } : {}),
  };
}
