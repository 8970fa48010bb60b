import type { ConnectionManager } from '../connection';
import { RateLimiter, type PermitGate } from '../coordination';
import type { Logger } from '../core';
import type { TopologyPlan } from '../topology';
import type { RegisteredJob } from './registered-job';

export interface JobLimitersDeps {
  readonly plan: TopologyPlan;
  readonly jobs: ReadonlyMap<string, RegisteredJob>;
  readonly manager: ConnectionManager;
  readonly reapplyTopology: () => Promise<void>;
  readonly log: Logger;
}

/**
 * The global rate limits of the jobs this worker runs (`@Job({ limiter })`): one broker-backed rate
 * limiter per key (permit consumer, refill election, refiller), shared by the jobs of that key.
 */
export class JobLimiters {
  private readonly byKey = new Map<string, RateLimiter>();
  private readonly byJob = new Map<string, RateLimiter>();

  constructor(deps: JobLimitersDeps) {
    const { plan, manager, reapplyTopology, log } = deps;
    for (const [name, job] of deps.jobs) {
      const { limiter } = job;
      if (limiter === undefined) continue;
      let rateLimiter = this.byKey.get(limiter.key);
      if (rateLimiter === undefined) {
        rateLimiter = new RateLimiter(
          manager,
          limiter,
          plan.naming.permitQueue(limiter.key),
          plan.naming.limiterLeaderQueue(limiter.key),
          reapplyTopology,
          log.child({ limiter: limiter.key }),
        );
        this.byKey.set(limiter.key, rateLimiter);
      }
      this.byJob.set(name, rateLimiter);
    }
  }

  limiterFor(jobName: string): PermitGate | undefined {
    return this.byJob.get(jobName);
  }

  /** The connection's ready hook. */
  async open(generation: number): Promise<void> {
    await Promise.all([...this.byKey.values()].map((limiter) => limiter.open(generation)));
  }

  /** Takes part in electing the process that refills each limit's permits. */
  async start(): Promise<void> {
    await Promise.all([...this.byKey.values()].map((limiter) => limiter.start()));
  }

  /** Jobs waiting for a permit go back to their queues at once; every refill token is handed on. */
  async stop(): Promise<void> {
    for (const limiter of this.byKey.values()) limiter.releaseWaiters();
    await Promise.all([...this.byKey.values()].map((limiter) => limiter.close()));
  }
}
