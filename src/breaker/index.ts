export { BreakerRegistry, type BreakerState } from './breaker-registry';
export { BreakerPauses, type QueueSwitch, type PauseHolder } from './breaker-pauses';
export {
  resolveBreakerOptions,
  BREAKER_DEFAULTS,
  type BreakerOptions,
  type ResolvedBreakerOptions,
} from './options';
