import type { Logger } from '../core';
import type { BreakerState } from './breaker-registry';

/** How the queues are switched: the worker's pause and resume, by topology queue key. */
export interface QueueSwitch {
  pause(queue: string): Promise<void>;
  resume(queue: string): Promise<void>;
}

/** Who may hold a queue besides its breakers: code (`warren.pauseLocal`) and an operator (warren/ops). */
export type PauseHolder = 'user' | 'operator';

/**
 * Decides which queues consume while circuit breakers are open. A queue consumes only while nobody
 * holds it: not the user (`warren.pauseLocal`), not an operator (a pause marker on the broker, see
 * warren/ops), and none of the breakers its jobs use is open. So a
 * breaker that half-opens does not resume a queue another open breaker (or the user) still holds.
 *
 * A queue uses a breaker when one of its jobs lists it in `@Job({ breakers })` (known up front, so
 * the queue pauses even before its own jobs hit the open breaker), or as soon as one of its jobs
 * calls `ctx.breaker(name)`.
 */
export class BreakerPauses {
  /** Breaker name → queues whose jobs use it. */
  private readonly queuesOf = new Map<string, Set<string>>();
  private readonly openBreakers = new Set<string>();
  private readonly pausedByUser = new Set<string>();
  private readonly pausedByOperator = new Set<string>();

  constructor(
    private readonly queues: QueueSwitch,
    private readonly log: Logger,
  ) {}

  /** Jobs of `queue` use `breaker`. If it is open right now, the queue pauses at once. */
  use(breaker: string, queue: string): void {
    let queues = this.queuesOf.get(breaker);
    if (queues === undefined) {
      queues = new Set();
      this.queuesOf.set(breaker, queues);
    }
    if (queues.has(queue)) return;
    queues.add(queue);
    if (this.openBreakers.has(breaker)) this.applyQuietly(queue, breaker);
  }

  /** A breaker changed state: open holds its queues; half-open and closed let go of them. */
  stateChanged(breaker: string, state: BreakerState): void {
    if (state === 'open') this.openBreakers.add(breaker);
    else this.openBreakers.delete(breaker);
    for (const queue of this.queuesOf.get(breaker) ?? []) this.applyQuietly(queue, breaker);
  }

  pauseByUser(queue: string): Promise<void> {
    return this.hold('user', queue, true);
  }

  /** Resumes unless an open breaker still holds the queue; it then resumes when that breaker half-opens. */
  resumeByUser(queue: string): Promise<void> {
    return this.hold('user', queue, false);
  }

  /** Takes or releases one holder's hold on a queue; the queue runs only when nobody holds it. */
  hold(holder: PauseHolder, queue: string, held: boolean): Promise<void> {
    const set = holder === 'user' ? this.pausedByUser : this.pausedByOperator;
    if (held) set.add(queue);
    else set.delete(queue);
    return this.apply(queue);
  }

  /** Who holds the queue now: 'user', 'operator' and the names of open breakers its jobs use. */
  holdersOf(queue: string): string[] {
    const holders = this.pausedByUser.has(queue) ? ['user'] : [];
    if (this.pausedByOperator.has(queue)) holders.push('operator');
    for (const breaker of this.openBreakers)
      if (this.queuesOf.get(breaker)?.has(queue)) holders.push(breaker);
    return holders;
  }

  private apply(queue: string): Promise<void> {
    return this.holdersOf(queue).length > 0 ? this.queues.pause(queue) : this.queues.resume(queue);
  }

  private applyQuietly(queue: string, breaker: string): void {
    this.apply(queue).catch((error: unknown) =>
      this.log.warn({ err: error, queue, breaker }, 'could not pause or resume the queue'),
    );
  }
}
