import type * as amqp from 'amqplib';
import type { Logger } from '../core';
import { ManagedChannel, type ConnectionManager } from '../connection';
import type { LeaderElection } from './leader-election';
import type { ResolvedLimiter } from './limiter-options';

const PERMIT = Buffer.alloc(0);

/**
 * Tops a rate limiter's permit queue up to `max` at the start of every window, while this process
 * holds the limiter's refill leadership. Windows are aligned to multiples of `durationMs` since the
 * epoch, so that a new refiller keeps the old one's rhythm. At takeover it tops up at once, but only
 * to the share of `max` that the rest of the current window is worth, so that a fresh start neither
 * waits a whole window nor grants two windows' worth in one. The queue's max-length
 * (reject-publish) is what bounds the permits: a refill can never leave more than `max` waiting,
 * whoever sends it and however often.
 */
export class PermitRefiller {
  private readonly managed: ManagedChannel;
  private timer: NodeJS.Timeout | undefined;
  private term = 0;

  constructor(
    manager: ConnectionManager,
    private readonly permitQueue: string,
    private readonly limiter: ResolvedLimiter,
    private readonly leadership: LeaderElection,
    private readonly log: Logger,
  ) {
    this.managed = new ManagedChannel(
      manager,
      { name: `refill ${permitQueue}`, confirm: false, setup: async () => undefined },
      log,
    );
    leadership.onChange((isLeader) => (isLeader ? this.begin() : this.end()));
  }

  open(generation: number): Promise<void> {
    return this.managed.open(generation);
  }

  async close(): Promise<void> {
    this.end();
    await this.managed.close();
  }

  private begin(): void {
    const term = ++this.term;
    const { max, durationMs } = this.limiter;
    const now = Date.now();
    const remaining = this.boundaryAfter(now) - now;
    void this.refill(term, Math.ceil((max * remaining) / durationMs));
    this.armNext(term);
  }

  private end(): void {
    this.term += 1;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Refills at `boundary` (by default the next one), then at each following one. The next boundary
   * is the previous one plus a window, never derived from the clock at firing time: a timer may fire
   * a millisecond before Date.now() reaches its target, and would then refill the same window twice.
   */
  private armNext(term: number, boundary = this.boundaryAfter(Date.now())): void {
    this.timer = setTimeout(
      () => {
        if (term !== this.term) return;
        void this.refill(term, this.limiter.max);
        const following = boundary + this.limiter.durationMs;
        // After a blocked event loop, skip the windows that passed rather than refill them all at once.
        this.armNext(term, following > Date.now() ? following : this.boundaryAfter(Date.now()));
      },
      Math.max(0, boundary - Date.now()),
    );
  }

  private boundaryAfter(ms: number): number {
    const { durationMs } = this.limiter;
    return (Math.floor(ms / durationMs) + 1) * durationMs;
  }

  /** Tops the queue up to `target` permits. */
  private async refill(term: number, target: number): Promise<void> {
    const channel = this.managed.current;
    if (!channel) return;
    try {
      const { messageCount } = await channel.checkQueue(this.permitQueue);
      if (term !== this.term || !this.leadership.isLeader) return;
      const missing = Math.min(target, this.limiter.max) - messageCount;
      for (let i = 0; i < missing; i++) send(channel, this.permitQueue);
    } catch (error) {
      this.log.warn(
        { err: error, queue: this.permitQueue },
        'refilling rate-limit permits failed; trying again next window',
      );
    }
  }
}

/** Unconfirmed on purpose: a permit the full queue refuses is meant to be lost. */
function send(channel: amqp.Channel, queue: string): void {
  channel.sendToQueue(queue, PERMIT, { persistent: false });
}
