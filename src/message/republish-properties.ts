import type { Message, Options } from 'amqplib';
import { isDirectReplyAddress } from './job-result';
import {
  BROKER_DEATH_HEADERS,
  HEADERS,
  SENDER_ROUTING_HEADERS,
  LAST_ERROR_MAX_CHARS,
  type DeadReason,
} from './headers';

// The properties of a message warren sends again: a retry's or re-delay's copy, a replay, a dead letter.

/**
 * A dead letter sent back to work (a replay): a first attempt again, without the headers of its death,
 * its redeliveries or a pending delay. `headerChanges` adds to that (a replay's own headers).
 */
export function replayProperties(
  original: Message['properties'],
  headerChanges: Readonly<Record<string, unknown>> = {},
): Options.Publish {
  return republishProperties(original, {
    [HEADERS.attempt]: 1,
    [HEADERS.deadReason]: undefined,
    [HEADERS.lastError]: undefined,
    [HEADERS.deadAt]: undefined,
    [HEADERS.queue]: undefined,
    [HEADERS.redeliveries]: undefined,
    [HEADERS.deliverAt]: undefined,
    ...headerChanges,
  });
}

/** Never republished; skipped, not `delete`d (a slow dictionary object, on every retry). */
const NOT_REPUBLISHED: ReadonlySet<string> = new Set([...BROKER_DEATH_HEADERS, ...SENDER_ROUTING_HEADERS]);

/**
 * Properties for a republish of a received message (retry, re-delay, redelivery count, replay):
 * everything the original carried except the broker's death headers, which would make the broker's
 * dead-letter cycle detection silently drop the message in the delay levels, and except the
 * properties only the original publisher may set: `user_id` (RabbitMQ closes the channel of a
 * publish whose `user_id` is not the connection's user, 406) and `expiration` (a per-message TTL
 * would expire the job in the delay levels) and `reply_to`: RabbitMQ 3.10 closes the channel of a
 * publish whose `reply_to` is `amq.rabbitmq.reply-to` (or its per-channel form) unless that channel
 * consumes direct reply-to, 406. A direct reply-to address moves to the `warren-reply-to` header.
 */
export function republishProperties(
  original: Message['properties'],
  headerChanges: Readonly<Record<string, unknown>>,
): Options.Publish {
  const headers: Record<string, unknown> = {};
  const source = original.headers ?? {};
  for (const key of Object.keys(source))
    if (!NOT_REPUBLISHED.has(key) && !Object.hasOwn(headerChanges, key)) headers[key] = source[key];
  for (const key of Object.keys(headerChanges)) {
    const value = headerChanges[key];
    if (value !== undefined) headers[key] = value;
  }
  const replyTo = original.replyTo as unknown;
  if (typeof replyTo === 'string' && isDirectReplyAddress(replyTo)) headers[HEADERS.replyTo] = replyTo;
  const properties = new RepublishedProperties(headers);
  copyDefined(original, properties, [
    'contentType',
    'contentEncoding',
    'type',
    'messageId',
    'timestamp',
    'priority',
    'correlationId',
    'appId',
  ]);
  return properties;
}

/**
 * The same properties with only warren's own headers, each a number, a boolean or a string of at
 * most LAST_ERROR_MAX_CHARS: for a republish whose headers amqplib cannot encode (a foreign
 * publisher's table near the 64 KiB limit, which warren's dead-letter headers push over it, or a
 * value of no AMQP type). The result always encodes.
 */
export function withOwnHeadersOnly(properties: Options.Publish): Options.Publish {
  const own = new Set<string>(Object.values(HEADERS));
  const headers: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(properties.headers ?? {})) {
    if (!own.has(key)) continue;
    const fits =
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value)) ||
      (typeof value === 'string' && value.length <= LAST_ERROR_MAX_CHARS);
    if (fits) headers[key] = value;
  }
  return { ...properties, headers };
}

/**
 * A republish's properties, the original's copied onto it: an instance of a class, as every object of a
 * retry's copy (see OutgoingPublish in connection).
 */
class RepublishedProperties implements Options.Publish {
  persistent = true;
  mandatory = true;
  constructor(public headers: Record<string, unknown>) {}
}

function copyDefined(
  from: Message['properties'],
  to: Options.Publish,
  keys: readonly (keyof Message['properties'] & keyof Options.Publish)[],
): void {
  const source = from as unknown as Record<string, unknown>;
  const target = to as unknown as Record<string, unknown>;
  for (const key of keys) if (source[key] !== undefined && source[key] !== null) target[key] = source[key];
}

export interface DeadLetterInfo {
  readonly reason: DeadReason;
  readonly error?: unknown;
  readonly queue: string;
  readonly attempt?: number;
  readonly deadAt: number;
}

/**
 * Properties of a dead letter: the original message plus why it died, where, when and after which attempt.
 */
export function deadLetterProperties(original: Message['properties'], info: DeadLetterInfo): Options.Publish {
  const changes: Record<string, unknown> = {
    [HEADERS.deadReason]: info.reason,
    [HEADERS.deadAt]: info.deadAt,
    [HEADERS.queue]: info.queue,
  };
  if (info.error !== undefined) changes[HEADERS.lastError] = describeError(info.error);
  if (info.attempt !== undefined) changes[HEADERS.attempt] = info.attempt;
  return republishProperties(original, changes);
}

/** `Name: message` plus the top of the stack, capped so the header table stays far below 64 KiB. */
export function describeError(error: unknown): string {
  let text: string;
  if (error instanceof Error)
    text = error.stack?.includes(error.message)
      ? error.stack
      : `${error.name}: ${error.message}\n${error.stack ?? ''}`;
  else {
    try {
      text = typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
    } catch {
      text = String(error);
    }
  }
  return text.length > LAST_ERROR_MAX_CHARS
    ? `${text.slice(0, LAST_ERROR_MAX_CHARS - 15)}… [truncated]`
    : text;
}
