import { jobKeyProblem, KEY_MAX_BYTES, PublishError, type WarrenErrorContext } from '../core';
import { HEADERS } from './headers';

/**
 * Job keys and lanes: part of the wire format (docs/reference/wire-format.md, docs/guide/fair-share.md).
 * The one place a key is read, checked and hashed: the publisher (fair share today), and the ordered
 * partitions and per-key limits that reuse lanes, all call these.
 *
 * - A key is a non-empty string of at most 255 UTF-8 bytes (`jobKeyProblem`, core), carried in the `warren-key`
 *   header.
 * - Its lane among `count` lanes is `fnv1a32(utf8(key)) mod count` (FNV-1a, 32 bits, offset basis
 *   2166136261, prime 16777619): a foreign publisher can compute it in a few lines and publish straight
 *   to the lane queue; one that does not is moved into its lane by the consumer of the queue's intake.
 */

/** The key under which a job without one (a foreign publisher's, or a job type without `key`) is scheduled. */
export const DEFAULT_KEY = '';

/**
 * A key as given to publish or returned by a job's key function, checked: a value that is not a string,
 * is empty or is over {@link KEY_MAX_BYTES} bytes is a PublishError `PUBLISH_INVALID_KEY`.
 */
export function checkJobKey(value: unknown, context: WarrenErrorContext): string {
  const problem = jobKeyProblem(value);
  if (problem !== undefined) throw invalidKey(problem, context);
  return value as string;
}

/**
 * The key of one publish: the call's `key` over the job's key function. A key function that throws is a
 * PublishError `PUBLISH_INVALID_KEY` with its error as `cause`. Undefined when neither gives one.
 */
export function resolveJobKey(
  explicit: unknown,
  keyOf: ((data: never) => unknown) | undefined,
  payload: unknown,
  context: WarrenErrorContext,
): string | undefined {
  if (explicit !== undefined) return checkJobKey(explicit, context);
  if (keyOf === undefined) return undefined;
  let value: unknown;
  try {
    value = (keyOf as (data: unknown) => unknown)(payload);
  } catch (error) {
    throw invalidKey(`function threw: ${(error as Error)?.message ?? String(error)}`, context, error);
  }
  return checkJobKey(value, context);
}

/**
 * The key a delivery carries, as the consumer reads it: the `warren-key` header when it is a valid key,
 * else undefined (no header, or one that is not a valid key: the job runs under the default key, counted).
 */
export function deliveredKey(headers: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const value = headers?.[HEADERS.key];
  if (typeof value === 'string') return jobKeyProblem(value) === undefined ? value : undefined;
  // amqplib hands a header sent as a long string by another client back as a Buffer
  if (Buffer.isBuffer(value) && value.length > 0 && value.length <= KEY_MAX_BYTES)
    return value.toString('utf8');
  return undefined;
}

/** FNV-1a, 32 bits, of the key's UTF-8 bytes. */
export function keyHash(key: string): number {
  let hash = 0x811c9dc5;
  const bytes = Buffer.from(key, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    hash ^= bytes[i]!;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The lane (0 to count - 1) of a key among `count` lanes. */
export function laneOf(key: string, count: number): number {
  return keyHash(key) % count;
}

function invalidKey(rule: string, context: WarrenErrorContext, cause?: unknown): PublishError {
  return new PublishError('PUBLISH_INVALID_KEY', `the job's key ${rule}`, {
    ...context,
    ...(cause === undefined ? {} : { cause }),
  });
}
