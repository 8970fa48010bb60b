/** What the broker says about itself in `connection.start` (AMQP server properties). */
export interface BrokerVersion {
  /** `RabbitMQ`, or another product speaking AMQP 0-9-1. */
  readonly product: string;
  /** As the broker spells it: `3.10.8`, `4.3.0`. */
  readonly version: string;
  /** Numeric major and minor, when the version starts with `N.N`. */
  readonly major?: number;
  readonly minor?: number;
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
  return Object.freeze({
    product: product === undefined ? 'unknown' : String(product),
    version: text,
    ...(parts ? { major: Number(parts[1]), minor: Number(parts[2]) } : {}),
  });
}
