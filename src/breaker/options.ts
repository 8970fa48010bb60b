import { checkInteger, checkKnownKeys, checkNumber } from '../core';

export interface BreakerOptions {
  /** A call slower than this counts as a failure. Default 10 000 ms; 0 disables. */
  readonly timeoutMs?: number;
  /** Open when this percentage of calls in the rolling window failed. Default 50. */
  readonly errorThresholdPercentage?: number;
  /** Stay open this long, then let one trial call through (half-open). Default 10 000 ms. */
  readonly resetTimeoutMs?: number;
  /** Calls in the window before the breaker may open at all. Default 5. */
  readonly volumeThreshold?: number;
  /** Length of the rolling statistics window. Default 10 000 ms. */
  readonly rollingCountTimeoutMs?: number;
}

export type ResolvedBreakerOptions = Required<BreakerOptions>;

export const BREAKER_DEFAULTS: ResolvedBreakerOptions = Object.freeze({
  timeoutMs: 10_000,
  errorThresholdPercentage: 50,
  resetTimeoutMs: 10_000,
  volumeThreshold: 5,
  rollingCountTimeoutMs: 10_000,
});

const KNOWN = {
  timeoutMs: true,
  errorThresholdPercentage: true,
  resetTimeoutMs: true,
  volumeThreshold: true,
  rollingCountTimeoutMs: true,
} as const satisfies Record<keyof BreakerOptions, true>;

export function resolveBreakerOptions(input: BreakerOptions = {}, path = 'breakers'): ResolvedBreakerOptions {
  checkKnownKeys(path, input, KNOWN);
  return Object.freeze({
    timeoutMs: checkInteger(`${path}.timeoutMs`, input.timeoutMs ?? BREAKER_DEFAULTS.timeoutMs, 0),
    errorThresholdPercentage: checkNumber(
      `${path}.errorThresholdPercentage`,
      input.errorThresholdPercentage ?? BREAKER_DEFAULTS.errorThresholdPercentage,
      1,
      100,
    ),
    resetTimeoutMs: checkInteger(
      `${path}.resetTimeoutMs`,
      input.resetTimeoutMs ?? BREAKER_DEFAULTS.resetTimeoutMs,
      1,
    ),
    volumeThreshold: checkInteger(
      `${path}.volumeThreshold`,
      input.volumeThreshold ?? BREAKER_DEFAULTS.volumeThreshold,
      0,
    ),
    rollingCountTimeoutMs: checkInteger(
      `${path}.rollingCountTimeoutMs`,
      input.rollingCountTimeoutMs ?? BREAKER_DEFAULTS.rollingCountTimeoutMs,
      10,
    ),
  });
}
