import type * as amqp from 'amqplib';
import { closeChannel, type Logger } from '../core';
import { ManagedChannel, type ConnectionManager } from '../connection';
import { LeaderElection } from './leader-election';
import type { ResolvedLimiter } from './limiter-options';
import { PermitRefiller } from './permit-refiller';

/** What waiting for a permit ended with. `closed`: the worker is shutting down. */
export type PermitOutcome = 'granted' | 'timeout' | 'closed';

/** The slice of a rate limiter the job processor uses. */
export interface PermitGate {
  readonly key: string;
  /** Waits up to the limiter's `waitMs` for a permit. */
  acquire(): Promise<PermitOutcome>;
  /**
   * How long to re-delay a job that got no permit: about one window, spread so that they do not return
   * together.
   */
  postponeDelayMs(): number;
}

interface Waiter {
  readonly resolve: (outcome: PermitOutcome) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * A global rate limit built on the broker (docs/guide/rate-limits.md). Permits wait in a bounded queue
 * (max-length = max, reject-publish) that the elected refiller tops up each window; a job takes one
 * (consume, ack) before it runs. This process consumes the permit queue only while a job waits,
 * with prefetch 1, so it never hoards permits another process's jobs could use; a permit that
 * arrives when nobody waits any more goes straight back. Waiters are served first come, first served.
 */
export class RateLimiter implements PermitGate {
  readonly key: string;
  private readonly managed: ManagedChannel;
  private readonly election: LeaderElection;
  private readonly refiller: PermitRefiller;
  private readonly waiters: Waiter[] = [];
  private consumerTag: string | undefined;
  private subscribing: amqp.Channel | undefined;
  private closed = false;

  constructor(
    manager: ConnectionManager,
    private readonly limiter: ResolvedLimiter,
    private readonly permitQueue: string,
    leaderQueue: string,
    private readonly reapplyTopology: () => Promise<void>,
    private readonly log: Logger,
  ) {
    this.key = limiter.key;
    this.managed = new ManagedChannel(
      manager,
      {
        name: `permits ${permitQueue}`,
        confirm: false,
        setup: (channel) => this.setup(channel),
        onClosed: () => (this.consumerTag = undefined),
      },
      log,
    );
    this.election = new LeaderElection(manager, leaderQueue, reapplyTopology, log);
    this.refiller = new PermitRefiller(manager, permitQueue, limiter, this.election, log);
  }

  /** The connection's ready hook. */
  async open(generation: number): Promise<void> {
    await Promise.all([
      this.managed.open(generation),
      this.election.open(generation),
      this.refiller.open(generation),
    ]);
  }

  /** Takes part in electing the process that refills the permits. */
  start(): Promise<void> {
    return this.election.start();
  }

  /** Jobs waiting now get `closed` (they go back to their queue); later ones too. */
  releaseWaiters(): void {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.resolve('closed');
    }
  }

  async close(): Promise<void> {
    this.releaseWaiters();
    await Promise.all([this.refiller.close(), this.election.stop(), this.managed.close()]);
  }

  acquire(): Promise<PermitOutcome> {
    if (this.closed) return Promise.resolve('closed');
    return new Promise<PermitOutcome>((resolve) => {
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(() => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) this.waiters.splice(index, 1);
          resolve('timeout');
          if (this.waiters.length === 0) void this.unsubscribe();
        }, this.limiter.waitMs),
      };
      this.waiters.push(waiter);
      void this.subscribe();
    });
  }

  postponeDelayMs(): number {
    return Math.round(this.limiter.durationMs * (0.5 + Math.random() / 2));
  }

  private async setup(channel: amqp.Channel): Promise<void> {
    this.consumerTag = undefined;
    await channel.prefetch(1, false);
    if (this.waiters.length > 0) await this.subscribe();
  }

  private async subscribe(): Promise<void> {
    const channel = this.managed.current;
    if (!channel || this.consumerTag !== undefined || this.subscribing === channel) return;
    this.subscribing = channel;
    try {
      const reply = await channel.consume(this.permitQueue, (message) => this.onPermit(message, channel), {
        noAck: false,
      });
      if (this.managed.current !== channel) return;
      this.consumerTag = reply.consumerTag;
      if (this.waiters.length === 0) await this.unsubscribe();
    } catch (error) {
      this.log.warn(
        { err: error, queue: this.permitQueue },
        'could not consume rate-limit permits; retrying when the channel re-opens',
      );
    } finally {
      if (this.subscribing === channel) this.subscribing = undefined;
    }
  }

  private async unsubscribe(): Promise<void> {
    const channel = this.managed.current;
    const tag = this.consumerTag;
    this.consumerTag = undefined;
    if (channel && tag) await channel.cancel(tag).catch(() => undefined);
  }

  /** The broker cancelled the consumer (the permit queue was deleted): declare it again and go on waiting. */
  private async handleCancel(channel: amqp.Channel): Promise<void> {
    this.consumerTag = undefined;
    try {
      await this.reapplyTopology();
      if (this.waiters.length > 0 && this.managed.current === channel) await this.subscribe();
    } catch (error) {
      this.log.warn(
        { err: error, queue: this.permitQueue },
        're-subscribing to permits failed; re-opening the channel',
      );
      await closeChannel(channel);
    }
  }

  private onPermit(message: amqp.ConsumeMessage | null, channel: amqp.Channel): void {
    if (message === null) {
      void this.handleCancel(channel);
      return;
    }
    const waiter = this.waiters.shift();
    if (!waiter) {
      settleQuietly(() => channel.nack(message, false, true));
      void this.unsubscribe();
      return;
    }
    settleQuietly(() => channel.ack(message));
    clearTimeout(waiter.timer);
    waiter.resolve('granted');
    if (this.waiters.length === 0) void this.unsubscribe();
  }
}

/** A settle on a closed channel throws synchronously; the broker has requeued the permit anyway. */
function settleQuietly(settle: () => void): void {
  try {
    settle();
  } catch {
    /* channel already closed */
  }
}
