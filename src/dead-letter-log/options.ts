import { checkInteger, ConfigurationError, validationMessage } from '../core';

/**
 * The dead-letter log's retention and reading. The broker drops a whole segment once it is older than
 * `maxAgeMs` or the stream is larger than `maxBytes`; what dropped is visible as the log's first offset
 * (`stats().expiredBefore`), never silently.
 */
export interface DeadLetterLogOptions {
  /** Letters older than this are dropped (a segment at a time), ms. Default 14 days: two weekly cycles. */
  readonly maxAgeMs?: number;
  /** The log is cut (oldest segment first) above this size, bytes. Default 1 GiB. */
  readonly maxBytes?: number;
  /**
   * Segment size, bytes: the unit retention drops, so it bounds how much more than `maxBytes` is kept and
   * how coarse age expiry is. Default 16 MiB (RabbitMQ's own default is 500 MB).
   */
  readonly segmentBytes?: number;
  /**
   * How long a read waits for the next record before deciding it reached the end of the log, ms. A stream
   * consumer is never told "end"; this is the price of finding the tail. Default 200.
   */
  readonly endIdleMs?: number;
}

export const DEAD_LETTER_LOG_DEFAULTS = Object.freeze({
  maxAgeMs: 14 * 24 * 3600_000,
  maxBytes: 1024 ** 3,
  segmentBytes: 16 * 1024 ** 2,
  endIdleMs: 200,
});

export interface ResolvedDeadLetterLogOptions {
  readonly maxAgeMs: number;
  readonly maxBytes: number;
  readonly segmentBytes: number;
  readonly endIdleMs: number;
}

export function resolveDeadLetterLogOptions(
  input: DeadLetterLogOptions = {},
  path = 'deadLetterLog',
): ResolvedDeadLetterLogOptions {
  const d = DEAD_LETTER_LOG_DEFAULTS;
  const maxBytes = checkInteger(`${path}.maxBytes`, input.maxBytes ?? d.maxBytes, 1);
  const segmentBytes = checkInteger(
    `${path}.segmentBytes`,
    input.segmentBytes ?? Math.min(d.segmentBytes, maxBytes),
    1,
  );
  if (segmentBytes > maxBytes)
    throw new ConfigurationError(
      validationMessage(`${path}.segmentBytes`, `must be <= maxBytes (${maxBytes})`, segmentBytes),
    );
  return Object.freeze({
    maxAgeMs: checkInteger(`${path}.maxAgeMs`, input.maxAgeMs ?? d.maxAgeMs, 1000),
    maxBytes,
    segmentBytes,
    endIdleMs: checkInteger(`${path}.endIdleMs`, input.endIdleMs ?? d.endIdleMs, 1, 60_000),
  });
}
