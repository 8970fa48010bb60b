import { LimitError, type JobDefinition } from '../core';
import type { QueueDeclaration } from './define-topology';
import type { PlannedKeyLimits } from './topology-plan';

/** Most runs at once of one key that `perKeyConcurrency` may allow. */
export const MAX_PER_KEY_CONCURRENCY = 10_000;
/** Most starts per window of one key: each is a timestamp the owner keeps while it is in the window. */
export const MAX_PER_KEY_RATE = 10_000;
/** Windows shorter than this are below a timer's and a broker round trip's precision. */
export const MIN_PER_KEY_WINDOW_MS = 10;
const MAX_WINDOW_MS = 2 ** 31 - 1;
const SCOPE_PATTERN = /^[A-Za-z0-9_.:-]{1,200}$/;

/** A per-key rate limit seen so far while planning, by scope: jobs naming one scope must agree. */
export type KeyLimitScopes = Map<
  string,
  { readonly jobName: string; readonly queue: string; readonly max: number; readonly durationMs: number }
>;

/**
 * The per-key limits of one job (docs/guide/per-key-limits.md), checked: `perKeyConcurrency` and
 * `limiter.per`. They hold across processes only if one process counts each key, so the job's queue must have
 * partitions (one owner each) that do not keep per-key order (`order: 'none'`: an ordered key runs one job at a
 * time already, and a job held for its key's rate would block its successors). A `limiter.per` function is the
 * job's key, so the job may not have a `key` function too. Undefined for a job without per-key limits; a bad
 * one is a LimitError (LIMIT_INVALID).
 */
export function planKeyLimits(
  job: JobDefinition,
  queue: QueueDeclaration,
  scopes: KeyLimitScopes,
  globalScopes: ReadonlySet<string>,
): PlannedKeyLimits | undefined {
  const path = `@Job('${job.name}')`;
  const fail = (message: string): never => {
    throw new LimitError(`${path}.${message}`, { jobName: job.name, queue: job.queue });
  };
  const per = job.limiter?.per;
  const concurrency = job.perKeyConcurrency;
  if (concurrency === undefined && per === undefined) return undefined;
  if (
    concurrency !== undefined &&
    (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_PER_KEY_CONCURRENCY)
  )
    fail(
      `perKeyConcurrency must be an integer from 1 to ${MAX_PER_KEY_CONCURRENCY} (got ${JSON.stringify(concurrency)})`,
    );
  if (per !== undefined && per !== 'key' && typeof per !== 'function')
    fail(`limiter.per must be 'key' or a function of the payload (got ${JSON.stringify(per)})`);
  if (typeof per === 'function' && job.key !== undefined)
    fail(
      'limiter.per is a function and the job has a key function too: the per-limit value is the job key (it picks the partition whose owner counts it); drop one, or use per: "key"',
    );
  const what = concurrency !== undefined ? 'perKeyConcurrency' : 'limiter.per';
  const partitions = queue.partitions;
  if (partitions === undefined)
    fail(
      `${what} needs its queue '${job.queue}' to have partitions: { count, order: 'none' } (one process counts each key's runs: the owner of its partition)`,
    );
  if (typeof partitions === 'number' || (partitions as { order?: string }).order !== 'none')
    fail(
      `${what} needs its queue '${job.queue}' to have partitions with order: 'none' (ordered partitions run one job per key at a time already, and a job held for its key's rate would hold up the key's later jobs)`,
    );
  const rate = per === undefined ? undefined : planKeyRate(job, scopes, globalScopes, fail);
  return {
    ...(concurrency !== undefined ? { concurrency } : {}),
    ...(rate !== undefined ? { rate } : {}),
  };
}

/** A per-key rate limit (`limiter` with `per`), checked against the ones of the jobs planned before it. */
function planKeyRate(
  job: JobDefinition,
  scopes: KeyLimitScopes,
  globalScopes: ReadonlySet<string>,
  fail: (message: string) => never,
): PlannedKeyLimits['rate'] {
  const limiter = job.limiter!;
  const scope = limiter.key ?? job.name;
  if (typeof scope !== 'string' || !SCOPE_PATTERN.test(scope))
    fail(`limiter.key must be 1 to 200 letters, digits or . _ : - (got ${JSON.stringify(scope)})`);
  const max = limiter.max;
  if (!Number.isInteger(max) || max < 1 || max > MAX_PER_KEY_RATE)
    fail(`limiter.max must be an integer from 1 to ${MAX_PER_KEY_RATE} (got ${JSON.stringify(max)})`);
  const durationMs = limiter.durationMs;
  if (!Number.isInteger(durationMs) || durationMs < MIN_PER_KEY_WINDOW_MS || durationMs > MAX_WINDOW_MS)
    fail(
      `limiter.durationMs must be an integer from ${MIN_PER_KEY_WINDOW_MS} to ${MAX_WINDOW_MS} (got ${JSON.stringify(durationMs)})`,
    );
  if (globalScopes.has(scope))
    fail(`limiter.key '${scope}' names a global limit of another job: a per-key limit needs its own key`);
  const earlier = scopes.get(scope);
  if (earlier !== undefined && earlier.jobName !== job.name) {
    if (earlier.queue !== job.queue)
      fail(
        `limiter.key '${scope}' is shared with job '${earlier.jobName}' on queue '${earlier.queue}': jobs sharing a per-key limit must be on one partitioned queue (one owner counts each key)`,
      );
    if (earlier.max !== max || earlier.durationMs !== durationMs)
      fail(
        `limiter shares key '${scope}' with job '${earlier.jobName}' but sets max ${max} per ${durationMs} ms instead of ${earlier.max} per ${earlier.durationMs} ms`,
      );
  } else scopes.set(scope, { jobName: job.name, queue: job.queue, max, durationMs });
  return { scope, max, durationMs };
}
