import { jobKeyProblem, LimitError } from '../core';
import type { PlannedJob } from '../topology';

/**
 * A record of the limits stream (`<namespace>.warren.limits`, docs/guide/per-key-limits.md#changing-limits-at-run-time):
 * UTF-8 JSON, one per change, signed like every record of warren's own streams when a key is configured. The
 * newest record of a (target, key) is its override; a record with neither `concurrency` nor `max` removes it.
 *
 * - `v`            1
 * - `target`       the job name (for `concurrency`) or the per-key rate limit's key (`limiter.key`, by default the
 *                  job name, for `max`): 1 to 200 letters, digits or `. _ : -`
 * - `key`          the job key: a non-empty string of at most 255 UTF-8 bytes
 * - `concurrency`  runs at once for the key: an integer from 1 to 10,000, or absent
 * - `max`          starts per window for the key (the window stays the planned one): 1 to 10,000, or absent
 * - `at`           ms since epoch, the writer's clock
 */
export interface LimitRecord {
  readonly v: 1;
  readonly target: string;
  readonly key: string;
  readonly concurrency?: number;
  readonly max?: number;
  readonly at: number;
}

/** What `ops.limits.set` takes: a key's override of a job's or a limit's planned value. */
export interface LimitOverrideInput {
  readonly target: string;
  readonly key: string;
  /** Runs at once for the key; `null` goes back to the planned value. */
  readonly concurrency?: number | null;
  /** Starts per window for the key; `null` goes back to the planned value. */
  readonly max?: number | null;
}

/** Records larger than this are skipped unread (a target, a key and two numbers fit in a few hundred bytes). */
export const MAX_LIMIT_RECORD_BYTES = 2048;
export const MAX_OVERRIDE = 10_000;
const TARGET_PATTERN = /^[A-Za-z0-9_.:-]{1,200}$/;

export function encodeLimitRecord(record: LimitRecord): Buffer {
  return Buffer.from(JSON.stringify(record), 'utf8');
}

/** The record in `content`, or undefined when it is not one (the reader skips it, counted as malformed). */
export function decodeLimitRecord(content: Buffer): LimitRecord | undefined {
  if (content.length > MAX_LIMIT_RECORD_BYTES) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(content.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  if (r.v !== 1 || typeof r.target !== 'string' || !TARGET_PATTERN.test(r.target)) return undefined;
  if (jobKeyProblem(r.key) !== undefined || typeof r.at !== 'number' || !Number.isFinite(r.at))
    return undefined;
  if (!isOverride(r.concurrency) || !isOverride(r.max)) return undefined;
  return {
    v: 1,
    target: r.target,
    key: r.key as string,
    ...(r.concurrency !== undefined ? { concurrency: r.concurrency as number } : {}),
    ...(r.max !== undefined ? { max: r.max as number } : {}),
    at: r.at,
  };
}

/**
 * Whether `plan`'s jobs have the limit an override names: `concurrency` on a job with `perKeyConcurrency`,
 * `max` on a per-key rate limit's key. A LimitError naming the ones there are otherwise; nothing to check
 * against when the caller planned no jobs (an ops made with only a namespace).
 */
export function checkLimitTarget(jobs: Iterable<PlannedJob>, input: LimitOverrideInput): void {
  const all = [...jobs];
  if (all.length === 0 || typeof input !== 'object' || input === null) return; // limitRecordOf says what is wrong
  const withConcurrency = all.filter((j) => j.keyLimits?.concurrency !== undefined).map((j) => j.name);
  const rateKeys = [...new Set(all.flatMap((j) => (j.keyLimits?.rate ? [j.keyLimits.rate.scope] : [])))];
  const refuse = (what: string, known: string[]) => {
    throw new LimitError(
      `ops.limits.set: '${input.target}' ${what} (${known.length > 0 ? `known: ${known.join(', ')}` : 'none is planned'})`,
    );
  };
  if (input.concurrency !== undefined && !withConcurrency.includes(input.target))
    refuse('is not a job with perKeyConcurrency', withConcurrency);
  if (input.max !== undefined && !rateKeys.includes(input.target))
    refuse('is not a per-key rate limit', rateKeys);
}

/** An override's input as a record, checked: a LimitError (LIMIT_INVALID) naming the field otherwise. */
export function limitRecordOf(
  input: LimitOverrideInput,
  current: LimitRecord | undefined,
  now: number,
): LimitRecord {
  const fail = (why: string, ...value: [unknown] | []): never => {
    throw new LimitError(
      `ops.limits.set: ${why}${value.length > 0 ? ` (got ${JSON.stringify(value[0])})` : ''}`,
    );
  };
  if (typeof input !== 'object' || input === null) fail('give { target, key, concurrency?, max? }', input);
  if (typeof input.target !== 'string' || !TARGET_PATTERN.test(input.target))
    fail('target must be a job name or a limiter key (1 to 200 letters, digits or . _ : -)', input.target);
  const problem = jobKeyProblem(input.key);
  if (problem !== undefined) fail(`key ${problem}`);
  if (input.concurrency === undefined && input.max === undefined)
    fail('give concurrency or max (null puts back the planned value)');
  const pick = (name: 'concurrency' | 'max'): number | undefined => {
    const value = input[name];
    if (value === undefined) return current?.[name];
    if (value === null) return undefined;
    if (!isOverride(value)) fail(`${name} must be an integer from 1 to ${MAX_OVERRIDE}, or null`, value);
    return value;
  };
  const concurrency = pick('concurrency');
  const max = pick('max');
  return {
    v: 1,
    target: input.target,
    key: input.key,
    ...(concurrency !== undefined ? { concurrency } : {}),
    ...(max !== undefined ? { max } : {}),
    at: now,
  };
}

function isOverride(value: unknown): boolean {
  return (
    value === undefined ||
    (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_OVERRIDE)
  );
}
