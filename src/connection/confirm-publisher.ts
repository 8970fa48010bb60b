import type * as amqp from 'amqplib';
import { jitteredBackoff, PublishError, ShutdownError, type Logger } from '../core';
import { isNack } from './amqp-reply';
import { BacklogWriter } from './backlog-writer';
import { blameRefusal, failMissingExchange, isRefusalClose } from './channel-refusal';
import type { ConnectionManager } from './connection-manager';
import { ManagedChannel } from './managed-channel';
import { PendingMessages } from './pending-messages';
import { newPending, type Batch, type OutgoingMessage, type Pending } from './pending-publish';

export { OutgoingPublish, type OutgoingMessage } from './pending-publish';

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

/**
 * A nacked publish is sent again only when its answer is due this long (beyond twice the last round trip)
 * before its deadline: the deadline sweep runs every 100 ms, and a copy in flight at it times out unsure.
 */
const NACK_ANSWER_MARGIN_MS = 100;

/**
 * Publishing with broker confirms on one confirm channel, many messages in flight. A promise
 * resolves only on the broker's ack. Unroutable messages (`mandatory`, basic.return) reject with
 * PUBLISH_UNROUTABLE; nacks are retried with backoff; messages in flight when the channel or the
 * connection dies are sent again on the next channel (at-least-once: a duplicate is possible, a loss
 * is not). While disconnected, blocked by a broker alarm or waiting for the socket to drain, messages
 * wait in a bounded buffer and fail with PUBLISH_TIMEOUT at their deadline: never unbounded, never silent.
 * Its parts: PendingMessages (what is pending and where, deadlines), BacklogWriter (writing to the
 * channel: its generation, writability, drain and the message sent alone), the refusal rules of
 * channel-refusal.ts; this class takes messages and decides on each confirm. Each part keeps its own
 * state behind its methods; none writes another's.
 */
export class ConfirmPublisher {
  private readonly managed: ManagedChannel<amqp.ConfirmChannel>;
  private readonly pending: PendingMessages;
  private readonly writer: BacklogWriter;
  private renewedGeneration = 0;
  private closed = false;
  /** The broker's reason when it closed channel `generation` refusing a message (406, 403). */
  private refusal: { readonly generation: number; readonly error: Error } | undefined;
  /** publisher.brokerMaxMessageBytes, lowered to what the broker says when it refuses a body as too large. */
  private maxMessageBytes: number;

  constructor(
    private readonly manager: ConnectionManager,
    private readonly options: ConfirmPublisherOptions,
    private readonly log: Logger,
    name = 'publisher',
  ) {
    this.maxMessageBytes = options.maxMessageBytes;
    this.pending = new PendingMessages(
      () => ({ reason: this.waitReason(), cause: this.manager.lastError }),
      (pending) => this.writer.messageFailed(pending),
    );
    this.managed = new ManagedChannel(
      manager,
      {
        name,
        confirm: true,
        setup: async (channel) => {
          const generation = this.writer.channelOpened();
          channel.on('return', (message: amqp.Message) => this.pending.markReturned(message));
          channel.on('error', (error: Error) => {
            if (isRefusalClose(error)) this.refusal = { generation, error };
          });
          channel.on('drain', () => this.writer.drained());
          // Let the channel finish opening before the backlog is written to it.
          setImmediate(() => this.writer.writeBuffered());
        },
        onClosed: (error) => {
          const isolated = this.writer.channelClosed();
          failMissingExchange(this.pending, error);
          this.blameRefusal(this.writer.generation, isolated);
        },
      },
      log,
    );
    this.writer = new BacklogWriter(this.managed, manager, this.pending, (pending, generation, error) =>
      this.handleConfirm(pending, generation, error),
    );
    manager.on('unblocked', () => this.writer.writeBuffered());
  }

  /** The manager's ready hook calls this after every (re)connect. */
  open(generation: number): Promise<void> {
    return this.managed.open(generation);
  }

  get pendingCount(): number {
    return this.pending.count;
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
        if (this.pending.bufferedCount >= this.options.maxBuffered) this.writer.writeBuffered();
        this.enqueue(newPending(messages[i]!, undefined, undefined, batch, i), true);
      }
      this.writer.writeBuffered();
    });
  }

  /** Resolves when nothing is buffered or in flight, or after `timeoutMs`. */
  flush(timeoutMs: number): Promise<boolean> {
    return this.pending.flush(timeoutMs);
  }

  /** Stops accepting messages; whatever is still waiting fails with SHUTTING_DOWN. */
  async close(): Promise<void> {
    this.closed = true;
    this.pending.failAll(() => new ShutdownError('publisher closed before the broker confirmed the message'));
    await this.managed.close();
  }

  private enqueue(pending: Pending, holdForGroup = false): void {
    const message = pending.message;
    const buffered = this.pending.bufferedCount;
    if (message.content.length > this.maxMessageBytes) {
      this.pending.fail(
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
    if (!holdForGroup && buffered === 0 && this.writer.canWrite()) {
      this.writer.write(pending);
    } else if (buffered >= this.options.maxBuffered) {
      this.pending.fail(
        pending,
        new PublishError(
          'PUBLISH_BUFFER_FULL',
          `publish buffer is full (${this.options.maxBuffered} messages waiting for the broker${this.waitReason()})`,
          { ...message.context, cause: this.manager.lastError },
        ),
      );
      return;
    } else {
      this.pending.hold(pending);
    }
    this.pending.watchDeadline(message.deadline);
  }

  private waitReason(): string {
    if (!this.manager.isConnected) return ', broker unreachable';
    if (this.manager.isBlocked) return ', connection blocked by a broker alarm';
    return '';
  }

  private handleConfirm(pending: Pending, generation: number, error: unknown): void {
    if (pending.settled || pending.writtenOn !== generation) return;
    const closed = error !== null && error !== undefined && !isNack(error);
    if (!closed) this.writer.releaseIsolation(pending);
    if (!error) {
      if (pending.returned) {
        const { exchange, routingKey } = pending.message;
        this.pending.fail(
          pending,
          new PublishError(
            'PUBLISH_UNROUTABLE',
            `no queue is bound for routing key '${routingKey}' on exchange '${exchange || '(default)'}': the message was returned`,
            pending.message.context,
          ),
        );
      } else {
        this.pending.succeed(pending);
      }
      return;
    }
    if (isNack(error)) this.retryNacked(pending, generation);
    else this.pending.requeue(pending, generation);
  }

  /**
   * Nacked: sent again after a backoff, on a new channel after NACKS_BEFORE_NEW_CHANNEL nacks. Not sent
   * again when its answer could not come before the deadline (twice the last attempt's round trip and a
   * margin): it waits out its deadline backing off and fails as PUBLISH_NACKED, not stored, rather than
   * as a PUBLISH_TIMEOUT that leaves the caller unsure whether its last copy was stored.
   */
  private retryNacked(pending: Pending, generation: number): void {
    const now = Date.now();
    const roundTripMs = pending.resentAt > 0 ? now - pending.resentAt : 0;
    pending.nacks += 1;
    this.pending.backOff(pending);
    const delay = jitteredBackoff(pending.nacks, 50, 2000, 0.3);
    this.log.debug(
      { ...pending.message.context, nacks: pending.nacks, delay },
      'publish nacked by the broker; retrying',
    );
    if (pending.nacks % NACKS_BEFORE_NEW_CHANNEL === 0) this.renewChannel(generation);
    setTimeout(() => {
      const resentAt = Date.now();
      // too late to be answered: it stays backing off, and the deadline sweep fails it as nacked
      if (!pending.settled && resentAt + 2 * roundTripMs + NACK_ANSWER_MARGIN_MS >= pending.message.deadline)
        return;
      if (!this.pending.backedOff(pending)) return;
      pending.resentAt = resentAt;
      if (this.writer.canWrite() && this.pending.bufferedCount === 0) this.writer.write(pending);
      else {
        this.pending.sendAgain(pending);
        this.writer.writeBuffered();
      }
    }, delay);
  }

  /**
   * Once per channel: close it, so that the next publishes go out on a fresh one (see
   * NACKS_BEFORE_NEW_CHANNEL).
   */
  private renewChannel(generation: number): void {
    if (generation !== this.writer.generation || this.renewedGeneration === generation) return;
    this.renewedGeneration = generation;
    this.log.warn(
      { nacks: NACKS_BEFORE_NEW_CHANNEL },
      'the broker keeps nacking publishes on this channel; opening a new one',
    );
    this.writer.channelRenewing();
    this.managed.renew();
  }

  /** After the broker closed channel `generation` refusing a message (406, 403): see blameRefusal. */
  private blameRefusal(generation: number, isolated: Pending | undefined): void {
    const refusal = this.refusal;
    if (refusal === undefined || refusal.generation !== generation) return;
    this.refusal = undefined;
    const brokerMax = blameRefusal(this.pending, refusal.error, generation, isolated, this.log);
    if (brokerMax !== undefined) this.maxMessageBytes = Math.min(this.maxMessageBytes, brokerMax);
  }
}
