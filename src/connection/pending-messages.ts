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
 * fails each at its deadline with one timer for all, running only while something is pending. It alone
 * moves a message between its three places (the methods below); the writer and the publisher ask.
 */
export class PendingMessages {
  /** Waiting to be written, in order. */
  private readonly buffer = new Fifo<Pending>();
  /** Written, waiting for the broker's confirm. */
  private readonly inFlight = new Set<Pending>();
  /** Nacked, waiting out their backoff before they are sent again. */
  private readonly backingOff = new Set<Pending>();
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

  /** How many wait in the buffer. */
  get bufferedCount(): number {
    return this.buffer.length;
  }

  /** How many were written and wait for their confirm. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** Buffers a message taken while it cannot be written now: it goes out after those before it. */
  hold(pending: Pending): void {
    this.buffer.push(pending);
  }

  /** The buffered message that goes out next, left in place. */
  nextBuffered(): Pending | undefined {
    return this.buffer.peek();
  }

  /** Takes the next buffered message, to write it. */
  takeBuffered(): Pending | undefined {
    return this.buffer.shift();
  }

  /** A message is written on channel `generation`: in flight until its confirm. */
  markWritten(pending: Pending, generation: number): void {
    pending.writtenOn = generation;
    this.inFlight.add(pending);
  }

  /**
   * Nacked: out of flight, waiting out its backoff. Still pending while it waits: it counts for flush
   * and close, and its deadline holds.
   */
  backOff(pending: Pending): void {
    this.inFlight.delete(pending);
    pending.writtenOn = 0;
    this.backingOff.add(pending);
  }

  /** Its backoff is over: true when it is still to be sent (see sendAgain), false when it settled meanwhile. */
  backedOff(pending: Pending): boolean {
    this.backingOff.delete(pending);
    return !pending.settled;
  }

  /** Puts a message back at the front of the buffer, to go out next. */
  sendAgain(pending: Pending): void {
    this.buffer.unshift(pending);
  }

  /** The buffered messages lost with channel `generation` (see blameRefusal). */
  lostWith(generation: number): Pending[] {
    return [...this.buffer].filter((p) => !p.settled && p.lostOn === generation);
  }

  /** The messages in flight, then the buffered ones: those a closed channel may have concerned. */
  unconfirmed(): Pending[] {
    return [...this.inFlight, ...this.buffer];
  }

  /** Drops the buffered messages that settled while they waited (failed by a channel's close, say). */
  dropSettled(): void {
    this.buffer.retain((p) => !p.settled);
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
    this.inFlight.delete(pending);
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
