import { TopologyError } from '../core';
import type { BrokerIdentity } from './broker-identity';
import type { QueueDeclaration, QueueType } from './define-topology';

/**
 * The only translation of warren options into AMQP `x-` arguments. Every `x-` name warren uses is
 * spelled in this file.
 */
export const X_ARGS = {
  queueType: 'x-queue-type',
  maxPriority: 'x-max-priority',
  messageTtl: 'x-message-ttl',
  maxLength: 'x-max-length',
  overflow: 'x-overflow',
  singleActiveConsumer: 'x-single-active-consumer',
  deliveryLimit: 'x-delivery-limit',
  /** Quorum queues, RabbitMQ 4.3+: which requeued deliveries come back only after a delay, and its bounds. */
  delayedRetryType: 'x-delayed-retry-type',
  delayedRetryMin: 'x-delayed-retry-min',
  delayedRetryMax: 'x-delayed-retry-max',
  /** On a quorum-queue delivery: how often it was returned as failed (a reject with requeue, a lost channel). */
  deliveryCount: 'x-delivery-count',
  deadLetterExchange: 'x-dead-letter-exchange',
  deadLetterRoutingKey: 'x-dead-letter-routing-key',
  deadLetterStrategy: 'x-dead-letter-strategy',
  expires: 'x-expires',
  alternateExchange: 'alternate-exchange',
  maxAge: 'x-max-age',
  maxLengthBytes: 'x-max-length-bytes',
  streamMaxSegmentSizeBytes: 'x-stream-max-segment-size-bytes',
  /** On a stream consumer: where to start reading; on each delivery from a stream: its offset. */
  streamOffset: 'x-stream-offset',
  /**
   * On a consumer: its delivery acknowledgement timeout, ms, over the broker's `consumer_timeout`
   * (RabbitMQ 3.12 and later; 3.10 ignores it). Measured on 4.3.6: a value above the broker's is
   * honoured, and 4.3 times out only quorum-queue consumers (it cancels them), no classic ones.
   */
  consumerTimeout: 'x-consumer-timeout',
  /** On a binding to a headers exchange: `all` (every header of the binding must match) or `any`. */
  match: 'x-match',
} as const;

/**
 * A live-event subscriber's queue (exclusive, auto-delete, server-named): at most `maxLength` events, the
 * oldest dropped first when a new one arrives (the subscriber counts the drops by sequence number).
 */
export function eventSubscriberQueueArguments(maxLength: number): Readonly<Record<string, unknown>> {
  return Object.freeze({ [X_ARGS.maxLength]: maxLength, [X_ARGS.overflow]: 'drop-head' });
}

/**
 * A partition member's heartbeat queue (exclusive, auto-delete, server-named): a heartbeat older than the
 * member timeout says nothing any more, so it expires instead of piling up while the member is frozen.
 */
export function memberQueueArguments(messageTtlMs: number): Readonly<Record<string, unknown>> {
  return Object.freeze({ [X_ARGS.messageTtl]: messageTtlMs });
}

/** A binding to a headers exchange matching every one of `headers`. */
export function headersBindingArguments(
  headers: Readonly<Record<string, string>>,
): Readonly<Record<string, unknown>> {
  return Object.freeze({ [X_ARGS.match]: 'all', ...headers });
}

/** The longest `x-consumer-timeout` warren asks for, ms (2^31 - 1: about 24.8 days). */
export const MAX_CONSUMER_TIMEOUT_MS = 2_147_483_647;

const NO_ARGUMENTS: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * Consumer arguments that let a delivery stay unacked for `timeoutMs` before the broker steps in
 * (RabbitMQ 3.12 and later; ignored by older brokers). None on a classic queue of RabbitMQ 4.3 or
 * later: it has no consumer timeout for classic queues any more, and refuses the argument there with a
 * channel error (measured on 4.3.6).
 */
export function consumerTimeoutArguments(
  timeoutMs: number,
  queueType: QueueType,
  broker: BrokerIdentity | undefined,
): Readonly<Record<string, unknown>> {
  if (queueType === 'classic' && broker?.features.classicConsumerTimeout === false) return NO_ARGUMENTS;
  return Object.freeze({ [X_ARGS.consumerTimeout]: Math.min(MAX_CONSUMER_TIMEOUT_MS, Math.ceil(timeoutMs)) });
}

/** Retention of a stream: by age and by size, both enforced a whole segment at a time by the broker. */
export interface StreamRetention {
  readonly maxAgeMs: number;
  readonly maxBytes: number;
  readonly segmentBytes: number;
}

/**
 * A stream queue (always durable: RabbitMQ requires it; RabbitMQ 3.9 or later). Age is given in whole
 * seconds (`<n>s`), the finest unit `x-max-age` takes. Without retention (the schedule registry: its
 * records are the schedules, and age or size limits would silently drop them) the broker keeps every
 * record until the stream is deleted. A stream takes no `x-expires`.
 */
export function streamAssertion(retention: StreamRetention | undefined): QueueAssertion {
  const args: Record<string, unknown> = { [X_ARGS.queueType]: 'stream' };
  if (retention !== undefined) {
    args[X_ARGS.maxAge] = `${Math.max(1, Math.ceil(retention.maxAgeMs / 1000))}s`;
    args[X_ARGS.maxLengthBytes] = retention.maxBytes;
    args[X_ARGS.streamMaxSegmentSizeBytes] = retention.segmentBytes;
  }
  return { durable: true, exclusive: false, autoDelete: false, arguments: Object.freeze(args) };
}

/**
 * Every queue warren declares is durable and non-exclusive: RabbitMQ 4.3 refuses transient non-exclusive
 * queues by default (deprecated feature `transient_nonexcl_queues`), so the type admits no other.
 */
export interface QueueAssertion {
  readonly durable: true;
  readonly exclusive: false;
  readonly autoDelete: false;
  readonly arguments: Readonly<Record<string, unknown>>;
}

export interface QueueArgumentInput {
  readonly declaration: QueueDeclaration;
  readonly type: QueueType;
  readonly deadLetterExchange?: string | undefined;
  readonly defaultDeliveryLimit: number;
  /** Safety net for tests: queues left unused this long are deleted by the broker. */
  readonly expiresMs?: number | undefined;
  readonly path: string;
}

export function jobQueueAssertion(input: QueueArgumentInput): QueueAssertion {
  const { declaration: d, type } = input;
  const typed: Record<string, unknown> = { [X_ARGS.queueType]: type };
  // Quorum queues (RabbitMQ 4.0+) prioritise without an argument; 3.x refuses x-max-priority on them.
  if (d.maxPriority !== undefined && type === 'classic') typed[X_ARGS.maxPriority] = d.maxPriority;
  if (d.messageTtlMs !== undefined) typed[X_ARGS.messageTtl] = d.messageTtlMs;
  if (d.maxLength !== undefined) typed[X_ARGS.maxLength] = d.maxLength;
  if (d.overflow !== undefined) typed[X_ARGS.overflow] = d.overflow;
  if (d.singleActiveConsumer) typed[X_ARGS.singleActiveConsumer] = true;
  if (type === 'quorum') typed[X_ARGS.deliveryLimit] = d.deliveryLimit ?? input.defaultDeliveryLimit;
  if (d.inPlaceRetryMs !== undefined) {
    // 'failed': a reject with requeue (and a lost channel) waits; a nack with requeue (warren's requeue of
    // an aborted or unconfirmed job) comes back at once, uncounted. min = max: the same delay every time.
    typed[X_ARGS.delayedRetryType] = 'failed';
    typed[X_ARGS.delayedRetryMin] = d.inPlaceRetryMs;
    typed[X_ARGS.delayedRetryMax] = d.inPlaceRetryMs;
  }
  if (input.deadLetterExchange !== undefined) typed[X_ARGS.deadLetterExchange] = input.deadLetterExchange;
  if (input.expiresMs !== undefined) typed[X_ARGS.expires] = input.expiresMs;
  return {
    durable: true,
    exclusive: false,
    autoDelete: false,
    arguments: Object.freeze(mergeRawArguments(typed, d.arguments, input.path)),
  };
}

/** A plain durable queue (parking queues, token queues): same type as its job queue. */
export function plainQueueAssertion(
  type: QueueType,
  extra: Readonly<Record<string, unknown>> = {},
  expiresMs?: number,
): QueueAssertion {
  const args: Record<string, unknown> = { [X_ARGS.queueType]: type, ...extra };
  if (expiresMs !== undefined) args[X_ARGS.expires] = expiresMs;
  return {
    durable: true,
    exclusive: false,
    autoDelete: false,
    arguments: Object.freeze(args),
  };
}

/**
 * A delay level: every message waits the level's TTL, then dead-letters into the next level down.
 * Quorum levels dead-letter at-least-once, which needs reject-publish overflow.
 */
export function delayLevelAssertion(
  type: QueueType,
  ttlMs: number,
  nextExchange: string,
  expiresMs?: number,
  nextRoutingKey?: string,
): QueueAssertion {
  const extra: Record<string, unknown> = {
    [X_ARGS.messageTtl]: ttlMs,
    [X_ARGS.deadLetterExchange]: nextExchange,
  };
  // A hold dead-letters into its one job queue through the default exchange.
  if (nextRoutingKey !== undefined) extra[X_ARGS.deadLetterRoutingKey] = nextRoutingKey;
  if (type === 'quorum') {
    extra[X_ARGS.deadLetterStrategy] = 'at-least-once';
    extra[X_ARGS.overflow] = 'reject-publish';
  }
  return plainQueueAssertion(type, extra, expiresMs);
}

/** The leader-election token queue: one active consumer, at most one token. */
export function leaderQueueAssertion(expiresMs?: number): QueueAssertion {
  return plainQueueAssertion(
    'quorum',
    { [X_ARGS.singleActiveConsumer]: true, [X_ARGS.maxLength]: 1, [X_ARGS.overflow]: 'reject-publish' },
    expiresMs,
  );
}

/** How long an unserved lookup request waits before the broker drops it, ms (the asker gave up long before). */
export const LOOKUP_REQUEST_TTL_MS = 10_000;
/** The lookup queue outlives its last server by this long, ms: a lookup sees no consumer and reads the streams. */
export const LOOKUP_QUEUE_EXPIRES_MS = 3_600_000;

/**
 * The history's lookup queue (docs/operating/cli.md#a-lookup-server): the processes that serve lookups
 * consume it, one active at a time, so one warm index answers; a request nobody takes expires.
 */
export function lookupQueueAssertion(): QueueAssertion {
  return plainQueueAssertion(
    'classic',
    { [X_ARGS.singleActiveConsumer]: true, [X_ARGS.messageTtl]: LOOKUP_REQUEST_TTL_MS },
    LOOKUP_QUEUE_EXPIRES_MS,
  );
}

/**
 * The cron ledger: one message, the latest record wins (a new one pushes the old one out at the
 * head). Quorum, like the token queue, so that it outlives a node and a broker restart.
 */
export function ledgerQueueAssertion(expiresMs?: number): QueueAssertion {
  return plainQueueAssertion('quorum', { [X_ARGS.maxLength]: 1, [X_ARGS.overflow]: 'drop-head' }, expiresMs);
}

/**
 * An operator's pause marker: an empty durable queue whose existence is the paused state. Quorum, like the
 * token queues, so that the pause outlives a node and a broker restart.
 */
export function pauseMarkerAssertion(expiresMs?: number): QueueAssertion {
  return plainQueueAssertion('quorum', {}, expiresMs);
}

/**
 * A rate limiter's permit queue: permits beyond one window's worth are refused. Durable classic (it was
 * transient, which RabbitMQ 4.3 refuses): permits are published transient, so a broker restart still
 * empties it and the refiller fills it again.
 */
export function permitQueueAssertion(maxPermits: number, expiresMs?: number): QueueAssertion {
  return plainQueueAssertion(
    'classic',
    { [X_ARGS.maxLength]: maxPermits, [X_ARGS.overflow]: 'reject-publish' },
    expiresMs,
  );
}

export function exchangeArguments(
  alternateExchange: string | undefined,
  raw: Readonly<Record<string, unknown>> | undefined,
  path: string,
): Record<string, unknown> {
  const typed: Record<string, unknown> = {};
  if (alternateExchange !== undefined) typed[X_ARGS.alternateExchange] = alternateExchange;
  return mergeRawArguments(typed, raw, path);
}

function mergeRawArguments(
  typed: Record<string, unknown>,
  raw: Readonly<Record<string, unknown>> | undefined,
  path: string,
): Record<string, unknown> {
  const merged = { ...typed };
  for (const [key, value] of Object.entries(raw ?? {})) {
    if (key in typed && typed[key] !== value) {
      throw new TopologyError(
        `${path}.arguments['${key}'] contradicts a typed option: ${JSON.stringify(value)} vs ${JSON.stringify(typed[key])}`,
      );
    }
    merged[key] = value;
  }
  return merged;
}
