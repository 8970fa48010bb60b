import type * as amqp from 'amqplib';
import { jitteredBackoff, PublishError, ShutdownError, type Logger } from '../core';
import { isNack, missingExchangeOf } from './amqp-reply';
import { brokerMaxMessageBytes, isRefusalClose, namesMessage } from './channel-refusal';
import type { ConnectionManager } from './connection-manager';
import { publishOnChannel, publishBatchOnChannel } from './channel-publish';
import { Fifo } from './fifo';
import { ManagedChannel } from './managed-channel';
import { newPending, settlePending, type Batch, type OutgoingMessage, type Pending } from './pending-publish';

export type { OutgoingMessage } from './pending-publish';

export interface ConfirmPublisherOptions {
  /** Messages held while the broker is away, blocked or the socket is full; one more fails at once. */
  readonly maxBuffered: number;
  /** The broker's `max_message_size`: a larger body fails at once (PUBLISH_TOO_LARGE), never sent. */
  readonly maxMessageBytes: number;
}

/**
 * A publish nacked this many times on one channel renews the channel. RabbitMQ 3.10 nacks every
 * publish to a quorum queue on a channel that first touched the queue while its leader's node was
 * down, until that node returns (measured: 30 s and counting after a new leader was elected); a new
 * channel reaches the new leader at once. A normal election nacks for 0.3-0.5 s, about 3 retries.
 */
const NACKS_BEFORE_NEW_CHANNEL = 4;

/** Buffered messages written together (one socket chunk): about 30 KiB of warren's small jobs. */
const GROUP_SIZE = 128;
/** Written in one event-loop turn at most, before the socket gets them (see writeBuffered). */
const MESSAGES_PER_TURN = 512;

/**
 * Publishing with broker confirms on one confirm channel, many messages in flight. A promise
 * resolves only on the broker's ack. Unroutable messages (`mandatory`, basic.return) reject with
 * PUBLISH_UNROUTABLE; nacks are retried with backoff; messages in flight when the channel or the
 * connection dies are sent again on the next channel (at-least-once: a duplicate is possible, a loss
 * is not). While disconnected, blocked by a broker alarm or waiting for the socket to drain, messages
 * wait in a bounded buffer and fail with PUBLISH_TIMEOUT at their deadline: never unbounded, never silent.
 */
export class ConfirmPublisher {
  private readonly managed: ManagedChannel<amqp.ConfirmChannel>;
  private readonly buffer = new Fifo<Pending>();
  private readonly inFlight = new Set<Pending>();
  /** Nacked, waiting out their backoff before they are sent again. */
  private readonly backingOff = new Set<Pending>();
  private renewedGeneration = 0;
  private awaitingDrain = false;
  private resumeScheduled = false;
  /**
   * False from the moment a write finds the channel closing or closed (amqplib throws at once, but
   * emits `close` only later) until the next channel is set up: writing the backlog to it would
   * throw and requeue in a loop that never yields.
   */
  private channelWritable = false;
  private sweeper: NodeJS.Timeout | undefined;
  /**
   * No pending message's deadline is earlier (it may be later, once that one settled): the sweep
   * skips its scan of every pending message until then.
   */
  private nextDeadline = Number.POSITIVE_INFINITY;
  private closed = false;
  private channelGeneration = 0;
  private readonly idleWaiters: (() => void)[] = [];
  /** The broker's reason when it closed channel `generation` refusing a message (406, 403). */
  private refusal: { readonly generation: number; readonly error: Error } | undefined;
  /** A message sent alone (see `blameRefusal`): nothing else is written until it is settled. */
  private isolated: Pending | undefined;
  /** publisher.brokerMaxMessageBytes, lowered to what the broker says when it refuses a body as too large. */
  private maxMessageBytes: number;

  constructor(
    private readonly manager: ConnectionManager,
    private readonly options: ConfirmPublisherOptions,
    private readonly log: Logger,
    name = 'publisher',
  ) {
    this.maxMessageBytes = options.maxMessageBytes;
    this.managed = new ManagedChannel(
      manager,
      {
        name,
        confirm: true,
        setup: async (channel) => {
          this.channelGeneration += 1;
          this.awaitingDrain = false;
          this.channelWritable = true;
          channel.on('return', (message: amqp.Message) => this.handleReturn(message));
          const generation = this.channelGeneration;
          channel.on('error', (error: Error) => {
            if (isRefusalClose(error)) this.refusal = { generation, error };
          });
          channel.on('drain', () => {
            this.awaitingDrain = false;
            this.writeBuffered();
          });
          // Let the channel finish opening before the backlog is written to it.
          setImmediate(() => this.writeBuffered());
        },
        onClosed: (error) => {
          const isolated = this.isolated;
          this.isolated = undefined;
          this.failMissingExchange(error);
          this.blameRefusal(this.channelGeneration, isolated);
        },
      },
      log,
    );
    manager.on('unblocked', () => this.writeBuffered());
  }

  /** The manager's ready hook calls this after every (re)connect. */
  open(generation: number): Promise<void> {
    return this.managed.open(generation);
  }

  get pendingCount(): number {
    return this.buffer.length + this.inFlight.size + this.backingOff.size;
  }

  send(message: OutgoingMessage): Promise<void> {
    if (this.closed) return Promise.reject(new ShutdownError('publisher is closed'));
    return new Promise<void>((resolve, reject) =>
      this.enqueue(newPending(message, resolve, reject, undefined, 0)),
    );
  }

  /**
   * Sends every message pipelined on the confirm channel (pausing on the socket's `drain` like
   * `send`), with one promise for the lot: it resolves, never rejects, with one entry per message in
   * input order, `undefined` for a confirmed message or the error it failed with.
   */
  sendMany(messages: readonly OutgoingMessage[]): Promise<(Error | undefined)[]> {
    const outcomes = new Array<Error | undefined>(messages.length);
    if (this.closed) return Promise.resolve(outcomes.fill(new ShutdownError('publisher is closed')));
    if (messages.length === 0) return Promise.resolve(outcomes);
    return new Promise((resolve) => {
      const batch: Batch = { outcomes, open: messages.length, resolve };
      for (let i = 0; i < messages.length; i++) {
        // written in groups below, each group's frames reaching the socket as one chunk
        if (this.buffer.length >= this.options.maxBuffered) this.writeBuffered();
        this.enqueue(newPending(messages[i]!, undefined, undefined, batch, i), true);
      }
      this.writeBuffered();
    });
  }

  private enqueue(pending: Pending, holdForGroup = false): void {
    const message = pending.message;
    if (message.content.length > this.maxMessageBytes) {
      this.fail(
        pending,
        new PublishError(
          'PUBLISH_TOO_LARGE',
          `the body is ${message.content.length} bytes, over the broker's max_message_size ` +
            `(${this.maxMessageBytes}); it was not sent`,
          message.context,
        ),
      );
      return;
    }
    if (message.deadline < this.nextDeadline) this.nextDeadline = message.deadline;
    if (!holdForGroup && this.canWrite() && this.buffer.length === 0) {
      this.write(pending);
    } else if (this.buffer.length >= this.options.maxBuffered) {
      this.fail(
        pending,
        new PublishError(
          'PUBLISH_BUFFER_FULL',
          `publish buffer is full (${this.options.maxBuffered} messages waiting for the broker${this.waitReason()})`,
          {
            ...message.context,
            cause: this.manager.lastError,
          },
        ),
      );
      return;
    } else {
      this.buffer.push(pending);
    }
    this.ensureSweeper();
  }

  /** Resolves when nothing is buffered or in flight, or after `timeoutMs`. */
  async flush(timeoutMs: number): Promise<boolean> {
    if (this.pendingCount === 0) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(this.pendingCount === 0), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Stops accepting messages; whatever is still waiting fails with SHUTTING_DOWN. */
  async close(): Promise<void> {
    this.closed = true;
    for (const pending of [...this.buffer, ...this.inFlight, ...this.backingOff])
      this.fail(pending, new ShutdownError('publisher closed before the broker confirmed the message'));
    this.buffer.clear();
    if (this.sweeper) clearInterval(this.sweeper);
    await this.managed.close();
  }

  private canWrite(): boolean {
    return (
      this.managed.current !== undefined &&
      this.channelWritable &&
      !this.manager.isBlocked &&
      !this.awaitingDrain &&
      this.isolated === undefined
    );
  }

  private waitReason(): string {
    if (!this.manager.isConnected) return ', broker unreachable';
    if (this.manager.isBlocked) return ', connection blocked by a broker alarm';
    return '';
  }

  private write(pending: Pending): void {
    const channel = this.managed.current!;
    const generation = this.channelGeneration;
    const { exchange, routingKey, content, properties } = pending.message;
    pending.writtenOn = generation;
    this.inFlight.add(pending);
    try {
      const ok = publishOnChannel(channel, exchange, routingKey, content, properties, (error: unknown) =>
        this.handleConfirm(pending, generation, error),
      );
      if (!ok) this.awaitingDrain = true;
    } catch (error) {
      if (error instanceof RangeError || error instanceof TypeError) {
        this.failUnencodable(pending, error);
        return;
      }
      // The channel is closing or closed: amqplib throws synchronously. Send it again on the next channel.
      this.channelWritable = false;
      this.requeue(pending, generation);
    }
  }

  /**
   * amqplib cannot encode the message (a header table over 64 KiB, a value of no AMQP type) and sent
   * nothing. Sending it again would fail the same way, and block the messages behind it.
   */
  private failUnencodable(pending: Pending, error: Error): void {
    this.fail(
      pending,
      new PublishError('PUBLISH_UNENCODABLE', `the message cannot be encoded for AMQP: ${error.message}`, {
        ...pending.message.context,
        cause: error,
      }),
    );
  }

  private writeBuffered(): void {
    let written = 0;
    while (this.buffer.length > 0 && this.canWrite()) {
      if (written >= MESSAGES_PER_TURN) {
        // amqplib's muxer hands the chunks to the socket on a later turn: let it, so the broker
        // works on the first messages while the next are encoded, rather than after all of them.
        if (!this.resumeScheduled) {
          this.resumeScheduled = true;
          setImmediate(() => {
            this.resumeScheduled = false;
            this.writeBuffered();
          });
        }
        return;
      }
      const next = this.buffer.peek()!;
      if (!next.settled && next.mustGoAlone) {
        // It was on a channel the broker closed for a message it refused: it goes out alone, after
        // what is in flight, so that if it is the culprit it is the only one lost, and known.
        if (this.inFlight.size > 0) return;
        this.buffer.shift();
        this.isolated = next;
        this.write(next);
        written += 1;
      } else if (this.buffer.length === 1) {
        this.buffer.shift();
        if (!next.settled) this.write(next);
        written += 1;
      } else written += this.writeGroup();
    }
  }

  /** Up to GROUP_SIZE buffered messages, their frames written to the socket as one chunk. */
  private writeGroup(): number {
    const group: Pending[] = [];
    // A message that must go alone ends the group: writeBuffered sends it once nothing is in flight.
    while (group.length < GROUP_SIZE && this.buffer.length > 0 && !this.buffer.peek()!.mustGoAlone) {
      const pending = this.buffer.shift()!;
      if (!pending.settled) group.push(pending);
    }
    const channel = this.managed.current!;
    const generation = this.channelGeneration;
    for (const pending of group) {
      pending.writtenOn = generation;
      this.inFlight.add(pending);
    }
    const result = publishBatchOnChannel(
      channel,
      group.map((p) => p.message),
      (index, error) => this.handleConfirm(group[index]!, generation, error),
    );
    for (const [index, error] of result.unencodable) this.failUnencodable(group[index]!, error);
    if (result.stoppedAt !== undefined) {
      // The channel is closing or closed: the rest go out again on the next channel, in order.
      this.channelWritable = false;
      for (let i = group.length - 1; i >= result.stoppedAt; i--) this.requeue(group[i]!, generation);
    }
    if (!result.writable) this.awaitingDrain = true;
    return group.length;
  }

  private handleConfirm(pending: Pending, generation: number, error: unknown): void {
    if (pending.settled || pending.writtenOn !== generation) return;
    const closed = error !== null && error !== undefined && !isNack(error);
    if (!closed) this.releaseIsolation(pending);
    if (!error) {
      this.inFlight.delete(pending);
      if (pending.returned) {
        const { exchange, routingKey } = pending.message;
        this.fail(
          pending,
          new PublishError(
            'PUBLISH_UNROUTABLE',
            `no queue is bound for routing key '${routingKey}' on exchange '${exchange || '(default)'}': the message was returned`,
            pending.message.context,
          ),
        );
      } else {
        this.succeed(pending);
      }
      return;
    }
    if (isNack(error)) {
      pending.nacks += 1;
      this.inFlight.delete(pending);
      pending.writtenOn = 0;
      const delay = jitteredBackoff(pending.nacks, 50, 2000, 0.3);
      this.log.debug(
        { ...pending.message.context, nacks: pending.nacks, delay },
        'publish nacked by the broker; retrying',
      );
      if (pending.nacks % NACKS_BEFORE_NEW_CHANNEL === 0) this.renewChannel(generation);
      // Still pending while it waits: it counts for flush and close, and its deadline holds.
      this.backingOff.add(pending);
      setTimeout(() => {
        this.backingOff.delete(pending);
        if (pending.settled) return;
        if (this.canWrite() && this.buffer.length === 0) this.write(pending);
        else {
          this.buffer.unshift(pending);
          this.writeBuffered();
        }
      }, delay);
      return;
    }
    this.requeue(pending, generation);
  }

  /**
   * Once per channel: close it, so that the next publishes go out on a fresh one (see
   * NACKS_BEFORE_NEW_CHANNEL).
   */
  private renewChannel(generation: number): void {
    if (generation !== this.channelGeneration || this.renewedGeneration === generation) return;
    this.renewedGeneration = generation;
    this.log.warn(
      { nacks: NACKS_BEFORE_NEW_CHANNEL },
      'the broker keeps nacking publishes on this channel; opening a new one',
    );
    this.channelWritable = false;
    this.managed.renew();
  }

  private requeue(pending: Pending, generation: number): void {
    if (pending.settled || pending.writtenOn !== generation) return;
    this.inFlight.delete(pending);
    pending.writtenOn = 0;
    pending.returned = false;
    pending.lostOn = generation;
    this.buffer.unshift(pending);
  }

  /**
   * After the broker closed channel `generation` refusing a message (406, 403): the message it names,
   * or the one that was alone in flight, fails with PUBLISH_REFUSED; every other message lost with
   * the channel is sent again, and if it is lost that way once more it goes out alone. So no frame
   * is sent again and again, and one bad message cannot hold up the others.
   */
  private blameRefusal(generation: number, isolated: Pending | undefined): void {
    const refusal = this.refusal;
    if (refusal === undefined || refusal.generation !== generation) return;
    this.refusal = undefined;
    const lost = [...this.buffer].filter((p) => !p.settled && p.lostOn === generation);
    const culprits = lost.filter((p) => p === isolated || namesMessage(refusal.error, p.message));
    const brokerMax = brokerMaxMessageBytes(refusal.error);
    if (brokerMax !== undefined) this.maxMessageBytes = Math.min(this.maxMessageBytes, brokerMax);
    for (const pending of culprits) {
      this.log.warn(
        { ...pending.message.context, reason: refusal.error.message },
        'the broker closed the publish channel because of this message; it fails alone',
      );
      const tooLarge = brokerMax !== undefined && pending.message.content.length > brokerMax;
      this.fail(
        pending,
        new PublishError(
          tooLarge ? 'PUBLISH_TOO_LARGE' : 'PUBLISH_REFUSED',
          `the broker refused the message and closed the channel: ${refusal.error.message}`,
          { ...pending.message.context, cause: refusal.error },
        ),
      );
    }
    for (const pending of lost) {
      if (pending.settled) continue;
      pending.refusals += 1;
      // Nobody named: each goes out alone until the culprit is found. Named: the rest go out again
      // as before, once; should one be lost that way again, then alone.
      pending.mustGoAlone = culprits.length === 0 || pending.refusals > 1;
    }
    this.buffer.retain((p) => !p.settled);
  }

  /** The message sent alone was confirmed or nacked: the others may go again. */
  private releaseIsolation(pending: Pending): void {
    if (this.isolated !== pending) {
      if (this.inFlight.size <= 1 && this.buffer.peek()?.mustGoAlone)
        setImmediate(() => this.writeBuffered());
      return;
    }
    this.isolated = undefined;
    setImmediate(() => this.writeBuffered());
  }

  /**
   * A publish to an exchange that does not exist closes the channel (404). Re-sending would close it
   * again until the deadline, so the messages for that exchange fail now, with the broker's reason.
   */
  private failMissingExchange(error: Error | undefined): void {
    const missing = missingExchangeOf(error);
    if (missing === undefined) return;
    for (const pending of [...this.inFlight, ...this.buffer]) {
      if (pending.message.exchange === missing) {
        this.fail(
          pending,
          new PublishError('PUBLISH_UNROUTABLE', `exchange '${missing}' does not exist on the broker`, {
            ...pending.message.context,
            cause: error,
          }),
        );
      }
    }
    this.buffer.retain((p) => !p.settled);
  }

  private handleReturn(message: amqp.Message): void {
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

  private succeed(pending: Pending): void {
    pending.settled = true;
    settlePending(pending, undefined);
    this.notifyIdle();
  }

  private fail(pending: Pending, error: Error): void {
    if (pending.settled) return;
    pending.settled = true;
    this.inFlight.delete(pending);
    // A message sent alone that times out must not hold the others back.
    if (this.isolated === pending) this.releaseIsolation(pending);
    settlePending(pending, error);
    this.notifyIdle();
  }

  private notifyIdle(): void {
    if (this.pendingCount > 0 || this.idleWaiters.length === 0) return;
    for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  /** One timer for all deadlines, running only while something is pending. */
  private ensureSweeper(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.sweep(), 100);
    this.sweeper.unref();
  }

  private sweep(): void {
    const now = Date.now();
    if (this.pendingCount > 0 && now < this.nextDeadline) return;
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
      if (pending.nacks > 0 && pending.writtenOn === 0) {
        const what = `the broker nacked the publish ${pending.nacks} time(s) until its deadline; it was not stored`;
        this.fail(pending, new PublishError('PUBLISH_NACKED', what, pending.message.context));
        continue;
      }
      const what =
        pending.writtenOn === 0
          ? `publish timed out waiting to be sent${this.waitReason()}; it was not sent`
          : 'publish timed out waiting for the broker to confirm it; it may or may not have reached the broker';
      this.fail(
        pending,
        new PublishError('PUBLISH_TIMEOUT', what, {
          ...pending.message.context,
          cause: this.manager.lastError,
        }),
      );
    }
    if (timedOut.length > 0) this.buffer.retain((p) => !p.settled);
    if (this.pendingCount === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}
