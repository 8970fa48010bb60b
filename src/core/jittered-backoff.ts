/**
 * Exponential backoff with jitter, shared by reconnects, publish retries and job retries:
 * `base * 2^(n-1)`, capped, with `jitter` (0..1) of it drawn at random.
 */
export function jitteredBackoff(
  n: number,
  baseMs: number,
  maxMs: number,
  jitter: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, n - 1));
  const spread = exp * jitter;
  return Math.max(0, Math.round(exp - spread + random() * spread));
}
