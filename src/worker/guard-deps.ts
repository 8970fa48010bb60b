import type { EmitEvent, Logger } from '../core';
import type { Republisher } from './republisher';

/** What every guard before a run uses: it settles what it stops, mostly by re-delaying it, and says so. */
export interface GuardDeps {
  readonly republisher: Pick<Republisher, 'delayed'>;
  readonly emit: EmitEvent;
}

/** A guard that asks a store or a stream first, and postpones the job while that cannot be read. */
export interface PostponingGuardDeps extends GuardDeps {
  readonly log: Logger;
  /** How long a job waits while its store or stream cannot be read, ms (`worker.postponeDelayMs`). */
  readonly postponeDelayMs: number;
}
