import {
  checkInteger,
  ConfigurationError,
  validationMessage,
  type JobDefinition,
  type RateLimitOptions,
} from '../core';

/** A rate limit with every default applied. */
export interface ResolvedLimiter {
  readonly key: string;
  readonly max: number;
  readonly durationMs: number;
  readonly waitMs: number;
}

export const LIMITER_DEFAULTS = Object.freeze({
  /**
   * Upper bound of the default `waitMs` (twice the window): a job holds its worker slot at most this long by
   * default.
   */
  maxDefaultWaitMs: 5_000,
  /** Windows shorter than this cannot be refilled on time by a timer and a broker round trip. */
  minDurationMs: 10,
  /**
   * Most permits per window: each is a message the refiller publishes in one synchronous loop at the
   * start of every window, so a million would stall the event loop. Higher rates: a shorter window.
   */
  maxPermits: 10_000,
});

const KEY_PATTERN = /^[A-Za-z0-9_.:-]{1,200}$/;
/** setTimeout's ceiling: the refill timer waits at most one window. */
const MAX_DURATION_MS = 2 ** 31 - 1;

/** Validates `@Job(name, { limiter })`; `path` is `@Job('api.call').limiter`. */
export function resolveLimiterOptions(
  path: string,
  jobName: string,
  input: RateLimitOptions<never>,
): ResolvedLimiter {
  if (input === null || typeof input !== 'object')
    throw new ConfigurationError(validationMessage(path, 'must be { max, durationMs }', input));
  const key = input.key ?? jobName;
  if (typeof key !== 'string' || !KEY_PATTERN.test(key))
    throw new ConfigurationError(
      validationMessage(`${path}.key`, 'must be 1 to 200 letters, digits or . _ : -', key),
    );
  const durationMs = checkInteger(
    `${path}.durationMs`,
    input.durationMs,
    LIMITER_DEFAULTS.minDurationMs,
    MAX_DURATION_MS,
  );
  return Object.freeze({
    key,
    max: checkInteger(`${path}.max`, input.max, 1, LIMITER_DEFAULTS.maxPermits),
    durationMs,
    waitMs: checkInteger(
      `${path}.waitMs`,
      input.waitMs ?? Math.min(2 * durationMs, LIMITER_DEFAULTS.maxDefaultWaitMs),
      0,
      MAX_DURATION_MS,
    ),
  });
}

/** Jobs sharing a key share one limit, so they must agree on it. */
export function checkSameLimit(
  path: string,
  limiter: ResolvedLimiter,
  earlier: { readonly path: string; readonly limiter: ResolvedLimiter },
): void {
  const a = earlier.limiter;
  if (a.max !== limiter.max || a.durationMs !== limiter.durationMs) {
    throw new ConfigurationError(
      `${path} shares rate-limit key '${limiter.key}' with ${earlier.path} but sets max ${limiter.max} per ${limiter.durationMs} ms instead of ${a.max} per ${a.durationMs} ms`,
    );
  }
}

/** The rate limits the jobs of one process declare. */
export interface DeclaredLimiters {
  /** One limiter per key. */
  readonly byKey: ReadonlyMap<string, ResolvedLimiter>;
  /** Job name -> the limiter it takes permits from (jobs without `limiter` are absent). */
  readonly ofJob: ReadonlyMap<string, ResolvedLimiter>;
}

/**
 * Validates the `limiter` of every job this process runs; jobs sharing a key must agree on it. Throws
 * ConfigurationError naming the path (`@Job('api.call').limiter`).
 */
export function resolveJobLimiters(jobs: readonly JobDefinition[]): DeclaredLimiters {
  const byKey = new Map<string, { path: string; limiter: ResolvedLimiter }>();
  const ofJob = new Map<string, ResolvedLimiter>();
  for (const definition of jobs) {
    // a per-key limit is counted by the owner of the key's partition (worker/key-limits.ts), not with permits
    if (definition.limiter === undefined || definition.limiter.per !== undefined) continue;
    const path = `@Job('${definition.name}').limiter`;
    const limiter = resolveLimiterOptions(path, definition.name, definition.limiter);
    const earlier = byKey.get(limiter.key);
    if (earlier) checkSameLimit(path, limiter, earlier);
    else byKey.set(limiter.key, { path, limiter });
    ofJob.set(definition.name, earlier?.limiter ?? limiter);
  }
  return { byKey: new Map([...byKey].map(([key, entry]) => [key, entry.limiter])), ofJob };
}
