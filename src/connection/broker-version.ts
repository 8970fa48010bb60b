/**
 * What warren relies on that differs between RabbitMQ versions, derived from the version the broker
 * reports at connect (docs/reference/supported-versions.md). For a broker that is not RabbitMQ or reports no
 * version, each is assumed as on the newest RabbitMQ.
 */
export interface BrokerFeatures {
  /** Quorum queues order messages by priority (4.0+; strictly, 0-31, from 4.3). */
  readonly quorumPriorities: boolean;
  /** A consumer may ask for its own acknowledgement timeout, `x-consumer-timeout` (3.12+). */
  readonly consumerTimeoutArgument: boolean;
  /** Classic-queue consumers time out too (before 4.3; 4.3 refuses the argument on classic queues). */
  readonly classicConsumerTimeout: boolean;
  /** A consumer timeout closes the channel (3.x) rather than cancelling the consumer (4.x). */
  readonly consumerTimeoutClosesChannel: boolean;
  /** Durable is not required of non-exclusive queues (before 4.3). */
  readonly transientQueues: boolean;
  /** Dead-letter cycle detection drops a message re-entering a queue with its `x-death` (3.x). */
  readonly dropsDeadLetterCycles: boolean;
  /** Quorum queues delay a requeued delivery by `x-delayed-retry-*` (4.3+). */
  readonly delayedRetry: boolean;
}

/** What the broker says about itself in `connection.start` (AMQP server properties). */
export interface BrokerVersion {
  /** `RabbitMQ`, or another product speaking AMQP 0-9-1. */
  readonly product: string;
  /** As the broker spells it: `3.10.8`, `4.3.0`. */
  readonly version: string;
  /** Numeric major and minor, when the version starts with `N.N`. */
  readonly major?: number;
  readonly minor?: number;
  readonly features: BrokerFeatures;
}

/**
 * Reads product and version from amqplib's server properties (`model.connection.serverProperties`).
 * Undefined when the broker sent neither.
 */
export function readBrokerVersion(serverProperties: unknown): BrokerVersion | undefined {
  if (serverProperties === null || typeof serverProperties !== 'object') return undefined;
  const { product, version } = serverProperties as { product?: unknown; version?: unknown };
  if (product === undefined && version === undefined) return undefined;
  const text = version === undefined ? 'unknown' : String(version);
  const parts = /^(\d+)\.(\d+)/.exec(text);
  const name = product === undefined ? 'unknown' : String(product);
  const numbers =
    parts && name === 'RabbitMQ' ? { major: Number(parts[1]), minor: Number(parts[2]) } : undefined;
  return Object.freeze({
    product: name,
    version: text,
    ...(parts ? { major: Number(parts[1]), minor: Number(parts[2]) } : {}),
    features: featuresOf(numbers),
  });
}

function featuresOf(version: { major: number; minor: number } | undefined): BrokerFeatures {
  // unknown: as on the newest RabbitMQ
  const { major, minor } = version ?? { major: Number.MAX_SAFE_INTEGER, minor: 0 };
  const atLeast = (m: number, n: number) => major > m || (major === m && minor >= n);
  return Object.freeze({
    quorumPriorities: atLeast(4, 0),
    consumerTimeoutArgument: atLeast(3, 12),
    classicConsumerTimeout: !atLeast(4, 3),
    consumerTimeoutClosesChannel: !atLeast(4, 0),
    transientQueues: !atLeast(4, 3),
    dropsDeadLetterCycles: !atLeast(4, 0),
    delayedRetry: atLeast(4, 3),
  });
}

/** The features a broker has, as one line for the connect log: `quorumPriorities, consumerTimeoutArgument, delayedRetry`. */
export function describeFeatures(features: BrokerFeatures): string {
  const on = Object.entries(features)
    .filter(([, value]) => value)
    .map(([name]) => name);
  return on.length === 0 ? 'none' : on.join(', ');
}
