import type { BackoffOptions } from './job-types';
import { checkInteger, checkKnownKeys, checkNumber } from './option-checks';
import { ConfigurationError } from './errors';
import { validationMessage } from './validation-message';

/**
 * Defaults for every job, overridable on warren (`jobDefaults`), on the job class (`@Job` options)
 * and, for attempts, per publish. Precedence: per call > job class > warren options > these.
 */
export interface JobDefaults {
  readonly attempts?: number;
  readonly backoff?: BackoffOptions;
  readonly timeoutMs?: number;
  readonly concurrency?: number;
}

export type ResolvedJobDefaults = Required<JobDefaults>;

export const JOB_DEFAULTS: ResolvedJobDefaults = Object.freeze({
  attempts: 3,
  backoff: Object.freeze({
    type: 'exponential',
    delayMs: 1000,
    maxDelayMs: 3_600_000,
    jitter: 0.2,
  }) as BackoffOptions,
  timeoutMs: 15 * 60_000,
  concurrency: 10,
});

const KNOWN = {
  attempts: true,
  backoff: true,
  timeoutMs: true,
  concurrency: true,
} as const satisfies Record<keyof JobDefaults, true>;

export function resolveJobDefaults(input: JobDefaults = {}, path = 'jobDefaults'): ResolvedJobDefaults {
  checkKnownKeys(path, input, KNOWN);
  return Object.freeze({
    attempts: checkInteger(`${path}.attempts`, input.attempts ?? JOB_DEFAULTS.attempts, 1),
    backoff: checkBackoff(`${path}.backoff`, input.backoff ?? JOB_DEFAULTS.backoff),
    timeoutMs: checkInteger(`${path}.timeoutMs`, input.timeoutMs ?? JOB_DEFAULTS.timeoutMs, 1),
    concurrency: checkInteger(
      `${path}.concurrency`,
      input.concurrency ?? JOB_DEFAULTS.concurrency,
      1,
      65_535,
    ),
  });
}

export function checkBackoff(path: string, backoff: BackoffOptions): BackoffOptions {
  if (typeof backoff === 'function') return backoff;
  if (backoff === null || typeof backoff !== 'object')
    throw new ConfigurationError(
      validationMessage(path, "must be { type: 'fixed' | 'exponential', delayMs } or a function", backoff),
    );
  if (backoff.type !== 'fixed' && backoff.type !== 'exponential')
    throw new ConfigurationError(
      validationMessage(
        `${path}.type`,
        "must be 'fixed' or 'exponential'",
        (backoff as { type: unknown }).type,
      ),
    );
  checkNumber(`${path}.delayMs`, backoff.delayMs, 0);
  if (backoff.type === 'exponential') {
    if (backoff.maxDelayMs !== undefined)
      checkNumber(`${path}.maxDelayMs`, backoff.maxDelayMs, backoff.delayMs);
    if (backoff.jitter !== undefined) checkNumber(`${path}.jitter`, backoff.jitter, 0, 1);
  }
  return backoff;
}
