import CircuitBreaker from 'opossum';
import { CircuitOpenError, type BreakerHandle, type Logger } from '../core';
import { resolveBreakerOptions, type BreakerOptions, type ResolvedBreakerOptions } from './options';

export type BreakerState = 'open' | 'halfOpen' | 'closed';

type Call = () => Promise<unknown>;

/**
 * One opossum breaker per named dependency, per warren instance. `fire` refuses calls while the
 * breaker is open with a typed CircuitOpenError (the worker postpones the job without spending an
 * attempt); state changes go to the logger and to `onStateChange`.
 */
export class BreakerRegistry {
  private readonly breakers = new Map<string, CircuitBreaker<[Call], unknown>>();
  private readonly handles = new Map<string, BreakerHandle>();

  constructor(
    private readonly configured: Readonly<Record<string, BreakerOptions>>,
    private readonly defaults: ResolvedBreakerOptions,
    private readonly onStateChange: (name: string, state: BreakerState) => void,
    private readonly log: Logger,
  ) {
    for (const [name, options] of Object.entries(configured))
      resolveBreakerOptions({ ...defaults, ...options }, `breakers.${name}`);
  }

  get(name: string): BreakerHandle {
    let handle = this.handles.get(name);
    if (handle) return handle;
    const breaker = this.create(name);
    handle = {
      fire: async <T>(call: () => Promise<T>): Promise<T> => {
        try {
          return (await breaker.fire(call)) as T;
        } catch (error) {
          if ((error as { code?: string })?.code === 'EOPENBREAKER')
            throw new CircuitOpenError(name, { cause: error });
          throw error;
        }
      },
      get isOpen() {
        return breaker.opened;
      },
    };
    this.handles.set(name, handle);
    return handle;
  }

  state(name: string): BreakerState | undefined {
    const breaker = this.breakers.get(name);
    if (!breaker) return undefined;
    return breaker.opened ? 'open' : breaker.halfOpen ? 'halfOpen' : 'closed';
  }

  /** Every breaker used so far, with its state. */
  states(): { name: string; state: BreakerState }[] {
    return [...this.breakers.keys()].map((name) => ({ name, state: this.state(name)! }));
  }

  shutdown(): void {
    for (const breaker of this.breakers.values()) breaker.shutdown();
  }

  private create(name: string): CircuitBreaker<[Call], unknown> {
    const options = resolveBreakerOptions({ ...this.defaults, ...this.configured[name] }, `breakers.${name}`);
    const breaker = new CircuitBreaker<[Call], unknown>((call: Call) => call(), {
      name,
      timeout: options.timeoutMs === 0 ? false : options.timeoutMs,
      errorThresholdPercentage: options.errorThresholdPercentage,
      resetTimeout: options.resetTimeoutMs,
      volumeThreshold: options.volumeThreshold,
      rollingCountTimeout: options.rollingCountTimeoutMs,
    });
    const report = (state: BreakerState) => () => {
      this.log.warn(
        { breaker: name, state },
        `circuit breaker ${state === 'open' ? 'opened' : state === 'halfOpen' ? 'half-open' : 'closed'}`,
      );
      this.onStateChange(name, state);
    };
    breaker.on('open', report('open'));
    breaker.on('halfOpen', report('halfOpen'));
    breaker.on('close', report('closed'));
    this.breakers.set(name, breaker);
    return breaker;
  }
}
