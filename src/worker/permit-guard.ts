import type { PermitGate } from '../coordination';
import type { JobDelivery } from './delivery';
import type { GuardDeps } from './guard-deps';

/** The guard of jobs with a global rate limit (`@Job({ limiter })`): no permit, no run. */
export class PermitGuard {
  constructor(private readonly deps: GuardDeps) {}

  /**
   * True once a rate-limit permit is taken. When none comes within the limiter's wait, the job is
   * re-delayed by about a window without spending an attempt, which frees its worker slot for the
   * queue's other jobs; on shutdown it goes back to its queue.
   */
  async admit(delivery: JobDelivery, limiter: PermitGate): Promise<boolean> {
    const outcome = await limiter.acquire();
    if (outcome === 'granted') return true;
    if (outcome === 'closed') {
      delivery.requeue();
      return false;
    }
    const delayMs = limiter.postponeDelayMs();
    if (await this.deps.republisher.delayed(delivery, delayMs, {}))
      this.deps.emit('rateLimited', { ...delivery.eventBase(), limiter: limiter.key, delayMs });
    return false;
  }
}
