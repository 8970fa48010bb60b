import type * as amqp from 'amqplib';
import { PublishError } from '../core';
import { Fifo } from './fifo';
import { settlePending, type Pending } from './pending-publish';

/** Why messages are waiting, for the errors of those that time out. */
export interface WaitState {
  /** `, broker unreachable`, `, connection blocked by a broker alarm` or empty. */
  readonly reason: string;
  /** The connection's last error, the cause of a timeout. */
  readonly cause: Error | undefined;
}

/**
 * Every message the confirm publisher has taken and not yet settled, wherever it is: buffered, in flight
 * on the channel, or backing off after a nack. Settles them (once), tells `flush` when none is left, and
 * fails each at its deadline with one timer for all, running only while something is pending.
 */
export class PendingMessages {
  /** Waiting to be written, in order. */
  readonly buffer = new Fifo<Pending>();
  /** Written, waiting for the broker's confirm. */
  readonly inFlight = new Set<Pending>();
  /** Nacked, waiting out their backoff before they are sent again. */
  readonly backingOff = new Set<Pending>();
  private readonly idleWaiters: (() => void)[] = [];
  private sweeper: NodeJS.Timeout | undefined;
  /**
   * No pending message's deadline is earlier (it may be later, once that one settled): the sweep
   * skips its scan of every pending message until then.
   */
  private nextDeadline = Number.POSITIVE_INFINITY;

  /**
   * @param waitState why messages wait now (read when one times out)
   * @param onFailed told after a message failed (the publisher releases a message it sent alone)
   */
  constructor(
    private readonly waitState: () => WaitState,
    private readonly onFailed: (pending: Pending) => void,
  ) {}

  get count(): number {
    return this.buffer.length + this.inFlight.size + this.backingOff.size;
  }

  /** A message was taken: its deadline counts from now on. */
  watchDeadline(deadline: number): void {
    if (deadline < this.nextDeadline) this.nextDeadline = deadline;
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.sweep(), 100);
    this.sweeper.unref();
  }

  succeed(pending: Pending): void {
    pending.settled = true;
    settlePending(pending, undefined);
    this.notifyIdle();
  }

  fail(pending: Pending, error: Error): void {
    if (pending.settled) return;
    pending.settled = true;
    this.inFlight.delete(pending);
    this.onFailed(pending);
    settlePending(pending, error);
    this.notifyIdle();
  }

  /** Resolves when nothing is buffered or in flight, or after `timeoutMs`. */
  async flush(timeoutMs: number): Promise<boolean> {
    if (this.count === 0) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(this.count === 0), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Fails every pending message with `error` and stops the deadline timer. */
  failAll(error: () => Error): void {
    for (const pending of [...this.buffer, ...this.inFlight, ...this.backingOff]) this.fail(pending, error());
    this.buffer.clear();
    if (this.sweeper) clearInterval(this.sweeper);
  }

  /**
   * A message written to channel `generation` that the channel lost (it closed, or threw on the write):
   * back to the front of the buffer, to go out again on the next channel.
   */
  requeue(pending: Pending, generation: number): void {
    if (pending.settled || pending.writtenOn !== generation) return;
    this.inFlight.delete(pending);
    pending.writtenOn = 0;
    pending.returned = false;
    pending.lostOn = generation;
    this.buffer.unshift(pending);
  }

  /** Marks the in-flight message the broker returned (basic.return): its confirm then fails it. */
  markReturned(message: amqp.Message): void {
    const id = message.properties.messageId;
    for (const pending of this.inFlight) {
      const m = pending.message;
      if (
        !pending.returned &&
        m.properties.messageId === id &&
        m.routingKey === message.fields.routingKey &&
        m.exchange === message.fields.exchange
      ) {
        pending.returned = true;
        return;
      }
    }
  }

  private notifyIdle(): void {
    if (this.count > 0 || this.idleWaiters.length === 0) return;
    for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  private sweep(): void {
    const now = Date.now();
    if (this.count > 0 && now < this.nextDeadline) return;
    const timedOut: Pending[] = [];
    let nextDeadline = Number.POSITIVE_INFINITY;
    for (const group of [this.buffer, this.inFlight, this.backingOff]) {
      for (const pending of group) {
        if (pending.settled) continue;
        if (pending.message.deadline <= now) timedOut.push(pending);
        else if (pending.message.deadline < nextDeadline) nextDeadline = pending.message.deadline;
      }
    }
    this.nextDeadline = nextDeadline;
    for (const pending of timedOut) {
      this.backingOff.delete(pending);
      this.fail(pending, this.timeoutError(pending));
    }
    if (timedOut.length > 0) this.buffer.retain((p) => !p.settled);
    if (this.count === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private timeoutError(pending: Pending): PublishError {
    if (pending.nacks > 0 && pending.writtenOn === 0) {
      const what = `the broker nacked the publish ${pending.nacks} time(s) until its deadline; it was not stored`;
      return new PublishError('PUBLISH_NACKED', what, pending.message.context);
    }
    const wait = this.waitState();
    const what =
      pending.writtenOn === 0
        ? `publish timed out waiting to be sent${wait.reason}; it was not sent`
        : 'publish timed out waiting for the broker to confirm it; it may or may not have reached the broker';
    return new PublishError('PUBLISH_TIMEOUT', what, { ...pending.message.context, cause: wait.cause });
  }
}
