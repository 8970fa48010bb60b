/**
 * The longest delay a job may carry (`delayMs`, `runAt`, a `warren-deliver-at` header): 366 days. A
 * publish asking for more is refused (CONFIGURATION_INVALID); a delivery whose `warren-deliver-at` lies
 * further ahead than this is a forged header and goes to dead letters as `invalid-headers`, instead
 * of parking a job in the delay levels for years.
 */
export const MAX_DELAY_MS = 366 * 24 * 3_600_000;

/** Longest job key, in UTF-8 bytes (an AMQP short string): docs/guide/fair-share.md. */
export const KEY_MAX_BYTES = 255;

/**
 * What is wrong with a job key (`key` on publish, a job's key function, a fairness weight's key), or
 * undefined when it is one: a non-empty string of at most {@link KEY_MAX_BYTES} UTF-8 bytes.
 */
export function jobKeyProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `must be a string (got ${value === null ? 'null' : typeof value})`;
  if (value.length === 0) return 'must not be empty';
  // a string of at most 85 UTF-16 units is at most 255 bytes: skip the byte count for short keys
  if (value.length > 85) {
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > KEY_MAX_BYTES) return `must be at most ${KEY_MAX_BYTES} UTF-8 bytes (got ${bytes})`;
  }
  return undefined;
}
