import { checkInteger, checkKnownKeys } from '../core';

export interface PublisherOptions {
  /** A publish that has no broker confirm after this long fails with PUBLISH_TIMEOUT. Default 10 000 ms. */
  readonly timeoutMs?: number;
  /**
   * Publishes held while the broker is unreachable, blocked by an alarm or the socket is full; one
   * more fails at once with PUBLISH_BUFFER_FULL. Default 100 000.
   */
  readonly maxBuffered?: number;
  /**
   * `publish` refuses a job whose JSON body is larger, at once, with PUBLISH_TOO_LARGE: jobs should
   * carry references, not blobs. Default 16 MiB (16 777 216 bytes), as `worker.maxBodyBytes`.
   */
  readonly maxBodyBytes?: number;
  /**
   * The broker's `max_message_size` (RabbitMQ 3.10's default: 128 MiB). Every message warren sends,
   * retries and dead letters included, is checked against it before it is sent, because the broker
   * closes the channel of a publish over it (PUBLISH_TOO_LARGE instead). Set it when the broker's is
   * lower. Default 134 217 728.
   */
  readonly brokerMaxMessageBytes?: number;
}

export type ResolvedPublisherOptions = Required<PublisherOptions>;

export const PUBLISHER_DEFAULTS: ResolvedPublisherOptions = Object.freeze({
  timeoutMs: 10_000,
  maxBuffered: 100_000,
  maxBodyBytes: 16 * 1024 * 1024,
  brokerMaxMessageBytes: 128 * 1024 * 1024,
});

const KNOWN = {
  timeoutMs: true,
  maxBuffered: true,
  maxBodyBytes: true,
  brokerMaxMessageBytes: true,
} as const satisfies Record<keyof PublisherOptions, true>;

export function resolvePublisherOptions(input: PublisherOptions = {}): ResolvedPublisherOptions {
  checkKnownKeys('publisher', input, KNOWN);
  const value = <K extends keyof PublisherOptions>(key: K) => input[key] ?? PUBLISHER_DEFAULTS[key];
  return Object.freeze({
    timeoutMs: checkInteger('publisher.timeoutMs', value('timeoutMs'), 1),
    maxBuffered: checkInteger('publisher.maxBuffered', value('maxBuffered'), 1),
    maxBodyBytes: checkInteger('publisher.maxBodyBytes', value('maxBodyBytes'), 1),
    brokerMaxMessageBytes: checkInteger('publisher.brokerMaxMessageBytes', value('brokerMaxMessageBytes'), 1),
  });
}
