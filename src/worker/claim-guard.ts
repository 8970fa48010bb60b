import type { Logger } from '../core';
import type { ClaimResult, IdempotencyStore } from '../idempotency';
import { decideClaim } from './delivery-triage';
import type { JobDelivery } from './delivery';
import type { PostponingGuardDeps } from './guard-deps';

/** A claim outlives the job's timeout by this much, so a slow finish is not mistaken for a dead worker. */
const CLAIM_MARGIN_MS = 30_000;

export interface ClaimGuardDeps extends PostponingGuardDeps {
  readonly idempotency: Pick<IdempotencyStore, 'claim' | 'release'>;
  /** The delay levels' unit: a copy that waits for another worker's claim waits at least this long, ms. */
  readonly delayUnitMs: number;
}

/** The guard of an idempotency store: one job id runs once, however often it is delivered. */
export class ClaimGuard {
  constructor(private readonly deps: ClaimGuardDeps) {}

  /**
   * True when this delivery may run (its id is claimed for `timeoutMs` and a margin); otherwise it was
   * settled here (a duplicate, or postponed while another worker runs it).
   */
  async admit(delivery: JobDelivery, timeoutMs: number): Promise<boolean> {
    let claim: ClaimResult;
    try {
      claim = await this.deps.idempotency.claim(delivery.job.jobId, timeoutMs + CLAIM_MARGIN_MS);
    } catch (error) {
      // Re-delayed rather than requeued: a requeue counts against the queue's delivery limit, so a
      // store outage of a few seconds would dead-letter every job that arrived meanwhile.
      const delayMs = this.deps.postponeDelayMs;
      this.deps.log.error(
        { ...delivery.eventBase(), err: error, delayMs },
        'idempotency store unavailable; postponing the job without spending an attempt',
      );
      await this.deps.republisher.delayed(delivery, delayMs, {});
      return false;
    }
    const decided = decideClaim(claim, this.deps.delayUnitMs);
    if (decided === 'run') return true;
    if (decided === 'duplicate') {
      const base = delivery.eventBase();
      delivery.ack();
      this.deps.log.info(base, 'duplicate of a completed job; acked without running');
      this.deps.emit('duplicate', base);
      return false;
    }
    await this.deps.republisher.delayed(delivery, decided, {});
    return false;
  }

  /**
   * Gives back the claim `admit` took for a delivery that does not run here after all (its ordered partition
   * was fenced during the guards): the next owner's claim of it then runs it instead of re-delaying it until
   * the lease runs out.
   */
  release(delivery: JobDelivery): Promise<void> {
    return releaseClaim(this.deps.idempotency, delivery, this.deps.log);
  }
}

/** Drops a delivery's claim so that a later copy may run; a store that fails to is logged, not thrown. */
export async function releaseClaim(
  idempotency: Pick<IdempotencyStore, 'release'>,
  delivery: JobDelivery,
  log: Logger,
): Promise<void> {
  await idempotency
    .release(delivery.job.jobId)
    .catch((error: unknown) =>
      log.warn({ err: error, ...delivery.eventBase() }, 'could not release the claim'),
    );
}
