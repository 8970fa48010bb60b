import { randomUUID } from 'node:crypto';
import type { Message, Options } from 'amqplib';
import { DecodeError, PublishError, type WarrenErrorContext } from '../core';
import { isDirectReplyAddress } from './job-result';
import {
  BROKER_DEATH_HEADERS,
  HEADERS,
  SENDER_ROUTING_HEADERS,
  JSON_CONTENT_TYPE,
  LAST_ERROR_MAX_CHARS,
  type DeadReason,
} from './headers';

/**
 * The wire format (docs/reference/wire-format.md): the payload is the body as UTF-8 JSON, unwrapped;
 * `type` is the job name, `message_id` the job id, persistent, `timestamp` in seconds, warren's
 * state in `warren-*` headers. Any AMQP client in any language can enqueue a job this way.
 */
export interface OutgoingJob {
  readonly name: string;
  readonly jobId: string;
  readonly body: Buffer;
  readonly attempt: number;
  readonly enqueuedAt: number;
  readonly priority?: number | undefined;
  readonly correlationId?: string | undefined;
  readonly headers?: Readonly<Record<string, unknown>> | undefined;
  readonly deliverAt?: number | undefined;
  readonly maxAttempts?: number | undefined;
}

export interface DecodedJob {
  readonly name: string;
  readonly jobId: string;
  readonly data: unknown;
  readonly attempt: number;
  readonly enqueuedAt: number;
  readonly deliverAt: number | undefined;
  readonly maxAttempts: number | undefined;
  readonly redeliveries: number;
  readonly headers: Readonly<Record<string, unknown>>;
  /**
   * warren control headers present with a value that is no integer (`warren-attempt: 'three'`): the
   * worker dead-letters such a job as `invalid-headers` rather than guess. Empty when all are sane.
   */
  readonly headerProblems: readonly string[];
}

/**
 * The payload as UTF-8 JSON. A payload JSON cannot carry (nested too deep for the stack, circular, a
 * bigint) throws PUBLISH_UNENCODABLE instead of the engine's raw RangeError or TypeError.
 */
export function encodeBody(data: unknown, context: WarrenErrorContext = {}): Buffer {
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch (error) {
    throw new PublishError(
      'PUBLISH_UNENCODABLE',
      `the payload cannot be encoded as JSON: ${(error as Error).message}`,
      { ...context, cause: error },
    );
  }
  // JSON.stringify(undefined) is undefined: a job without data travels as JSON null.
  return Buffer.from(json === undefined ? 'null' : json, 'utf8');
}

/** Rejects bytes that are not UTF-8 instead of decoding them into replacement characters. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function jobProperties(job: OutgoingJob): Options.Publish {
  const headers: Record<string, unknown> = {
    ...job.headers,
    [HEADERS.attempt]: job.attempt,
    [HEADERS.enqueuedAt]: job.enqueuedAt,
  };
  if (job.deliverAt !== undefined) headers[HEADERS.deliverAt] = job.deliverAt;
  if (job.maxAttempts !== undefined) headers[HEADERS.maxAttempts] = job.maxAttempts;
  const properties: Options.Publish = {
    contentType: JSON_CONTENT_TYPE,
    type: job.name,
    messageId: job.jobId,
    persistent: true,
    mandatory: true,
    timestamp: Math.floor(job.enqueuedAt / 1000),
    headers,
  };
  if (job.priority !== undefined) properties.priority = job.priority;
  if (job.correlationId !== undefined) properties.correlationId = job.correlationId;
  return properties;
}

/** Decodes a delivery into a job, or throws a DecodeError that says what is wrong with it. */
export function decodeJob(message: Pick<Message, 'content' | 'properties'>, now: number): DecodedJob {
  const props = message.properties;
  const headers = (props.headers ?? {}) as Record<string, unknown>;
  const name = typeof props.type === 'string' ? props.type : '';
  const jobId =
    typeof props.messageId === 'string' && props.messageId.length > 0 ? props.messageId : randomUUID();
  if (name.length === 0) throw new DecodeError('message has no `type` property naming its job', { jobId });
  const contentType = typeof props.contentType === 'string' ? props.contentType.toLowerCase() : undefined;
  if (contentType !== undefined && !contentType.startsWith(JSON_CONTENT_TYPE)) {
    throw new DecodeError(`content type '${props.contentType}' is not ${JSON_CONTENT_TYPE}`, {
      jobName: name,
      jobId,
    });
  }
  let text: string;
  try {
    text = STRICT_UTF8.decode(message.content);
  } catch (error) {
    throw new DecodeError('body is not valid UTF-8', { jobName: name, jobId, cause: error });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new DecodeError(`body is not valid JSON: ${(error as Error).message}`, {
      jobName: name,
      jobId,
      cause: error,
    });
  }
  const timestampMs = typeof props.timestamp === 'number' ? props.timestamp * 1000 : undefined;
  const headerProblems: string[] = [];
  const control = (header: string): number | undefined => {
    const value = headers[header];
    if (value === undefined) return undefined;
    const n = positiveInteger(value);
    if (n === undefined) headerProblems.push(`${header} is not an integer >= 0 (got ${showValue(value)})`);
    return n;
  };
  return {
    name,
    jobId,
    data,
    attempt: control(HEADERS.attempt) ?? 1,
    // Informational only: a garbage value falls back to the AMQP timestamp.
    enqueuedAt: positiveInteger(headers[HEADERS.enqueuedAt]) ?? timestampMs ?? now,
    deliverAt: control(HEADERS.deliverAt),
    maxAttempts: control(HEADERS.maxAttempts),
    redeliveries: control(HEADERS.redeliveries) ?? 0,
    headers,
    headerProblems,
  };
}

function showValue(value: unknown): string {
  try {
    const text = typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value));
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  } catch {
    return typeof value;
  }
}

/** Header values from foreign publishers can be strings, bigints or garbage: accept only sane integers. */
function positiveInteger(value: unknown): number | undefined {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && value.trim() !== ''
        ? Number(value)
        : typeof value === 'bigint'
          ? Number(value)
          : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

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
  const properties: Options.Publish = { headers, persistent: true, mandatory: true };
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
