export { BreakerRegistry, type BreakerState } from './breaker-registry';
export { resolveBreakerOptions, BREAKER_DEFAULTS, type BreakerOptions, type ResolvedBreakerOptions } from './options';
