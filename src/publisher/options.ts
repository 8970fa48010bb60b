import { checkInteger } from '../core';

export interface PublisherOptions {
  /** A publish that has no broker confirm after this long fails with PUBLISH_TIMEOUT. Default 10 000 ms. */
  readonly timeoutMs?: number;
  /**
   * Publishes held while the broker is unreachable, blocked by an alarm or the socket is full; one
   * more fails at once with PUBLISH_BUFFER_FULL. Default 100 000.
   */
  readonly maxBuffered?: number;
}

export type ResolvedPublisherOptions = Required<PublisherOptions>;

export const PUBLISHER_DEFAULTS: ResolvedPublisherOptions = Object.freeze({
  timeoutMs: 10_000,
  maxBuffered: 100_000,
});

export function resolvePublisherOptions(input: PublisherOptions = {}): ResolvedPublisherOptions {
  return Object.freeze({
    timeoutMs: checkInteger('publisher.timeoutMs', input.timeoutMs ?? PUBLISHER_DEFAULTS.timeoutMs, 1),
    maxBuffered: checkInteger(
      'publisher.maxBuffered',
      input.maxBuffered ?? PUBLISHER_DEFAULTS.maxBuffered,
      1,
    ),
  });
}
