import type * as amqp from 'amqplib';
import { PublishError } from '../core';
import { publishBatchOnChannel, publishOnChannel } from './channel-publish';
import type { ConnectionManager } from './connection-manager';
import type { ManagedChannel } from './managed-channel';
import type { PendingMessages } from './pending-messages';
import type { Pending } from './pending-publish';

/** Buffered messages written together (one socket chunk): about 30 KiB of warren's small jobs. */
const GROUP_SIZE = 128;
/** Written in one event-loop turn at most, before the socket gets them (see writeBuffered). */
const MESSAGES_PER_TURN = 512;

/** Told of each written message's confirm, nack or loss with channel `generation`. */
export type ConfirmHandler = (pending: Pending, generation: number, error: unknown) => void;

/**
 * The confirm publisher's writing half: puts pending messages on the current confirm channel, one at once
 * when nothing waits, the backlog in groups whose frames reach the socket as one chunk, and stops while
 * the socket asks for `drain`, a broker alarm blocks the connection, the channel is closing, or a message
 * goes out alone.
 */
export class BacklogWriter {
  /** Generation of the current channel: a message's `writtenOn` says which channel it was written to. */
  generation = 0;
  /**
   * False from the moment a write finds the channel closing or closed (amqplib throws at once, but
   * emits `close` only later) until the next channel is set up: writing the backlog to it would
   * throw and requeue in a loop that never yields.
   */
  channelWritable = false;
  private awaitingDrain = false;
  private resumeScheduled = false;
  /** A message sent alone (see blameRefusal): nothing else is written until it is settled. */
  isolated: Pending | undefined;

  constructor(
    private readonly managed: ManagedChannel<amqp.ConfirmChannel>,
    private readonly manager: ConnectionManager,
    private readonly pending: PendingMessages,
    private readonly onConfirm: ConfirmHandler,
  ) {}

  /** A new channel is set up: its generation, and nothing holds the backlog back but the channel opening. */
  channelOpened(): number {
    this.generation += 1;
    this.awaitingDrain = false;
    this.channelWritable = true;
    return this.generation;
  }

  /** The socket took what it had: write the backlog. */
  drained(): void {
    this.awaitingDrain = false;
    this.writeBuffered();
  }

  canWrite(): boolean {
    return (
      this.managed.current !== undefined &&
      this.channelWritable &&
      !this.manager.isBlocked &&
      !this.awaitingDrain &&
      this.isolated === undefined
    );
  }

  /** Writes one message now (the caller checked canWrite). */
  write(pending: Pending): void {
    const channel = this.managed.current!;
    const generation = this.generation;
    const { exchange, routingKey, content, properties } = pending.message;
    pending.writtenOn = generation;
    this.pending.inFlight.add(pending);
    try {
      const ok = publishOnChannel(channel, exchange, routingKey, content, properties, (error: unknown) =>
        this.onConfirm(pending, generation, error),
      );
      if (!ok) this.awaitingDrain = true;
    } catch (error) {
      if (error instanceof RangeError || error instanceof TypeError) {
        this.failUnencodable(pending, error);
        return;
      }
      // The channel is closing or closed: amqplib throws synchronously. Send it again on the next channel.
      this.channelWritable = false;
      this.pending.requeue(pending, generation);
    }
  }

  /** Writes the backlog while it can, at most MESSAGES_PER_TURN now and the rest on the next turn. */
  writeBuffered(): void {
    const buffer = this.pending.buffer;
    let written = 0;
    while (buffer.length > 0 && this.canWrite()) {
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
      const next = buffer.peek()!;
      if (!next.settled && next.mustGoAlone) {
        // It was on a channel the broker closed for a message it refused: it goes out alone, after
        // what is in flight, so that if it is the culprit it is the only one lost, and known.
        if (this.pending.inFlight.size > 0) return;
        buffer.shift();
        this.isolated = next;
        this.write(next);
        written += 1;
      } else if (buffer.length === 1) {
        buffer.shift();
        if (!next.settled) this.write(next);
        written += 1;
      } else written += this.writeGroup();
    }
  }

  /** The message sent alone was confirmed or nacked: the others may go again. */
  releaseIsolation(pending: Pending): void {
    if (this.isolated !== pending) {
      if (this.pending.inFlight.size <= 1 && this.pending.buffer.peek()?.mustGoAlone)
        setImmediate(() => this.writeBuffered());
      return;
    }
    this.isolated = undefined;
    setImmediate(() => this.writeBuffered());
  }

  /** Up to GROUP_SIZE buffered messages, their frames written to the socket as one chunk. */
  private writeGroup(): number {
    const buffer = this.pending.buffer;
    const group: Pending[] = [];
    // A message that must go alone ends the group: writeBuffered sends it once nothing is in flight.
    while (group.length < GROUP_SIZE && buffer.length > 0 && !buffer.peek()!.mustGoAlone) {
      const pending = buffer.shift()!;
      if (!pending.settled) group.push(pending);
    }
    const channel = this.managed.current!;
    const generation = this.generation;
    for (const pending of group) {
      pending.writtenOn = generation;
      this.pending.inFlight.add(pending);
    }
    const result = publishBatchOnChannel(
      channel,
      group.map((p) => p.message),
      (index, error) => this.onConfirm(group[index]!, generation, error),
    );
    for (const [index, error] of result.unencodable) this.failUnencodable(group[index]!, error);
    if (result.stoppedAt !== undefined) {
      // The channel is closing or closed: the rest go out again on the next channel, in order.
      this.channelWritable = false;
      for (let i = group.length - 1; i >= result.stoppedAt; i--) this.pending.requeue(group[i]!, generation);
    }
    if (!result.writable) this.awaitingDrain = true;
    return group.length;
  }

  /**
   * amqplib cannot encode the message (a header table over 64 KiB, a value of no AMQP type) and sent
   * nothing. Sending it again would fail the same way, and block the messages behind it.
   */
  private failUnencodable(pending: Pending, error: Error): void {
    this.pending.fail(
      pending,
      new PublishError('PUBLISH_UNENCODABLE', `the message cannot be encoded for AMQP: ${error.message}`, {
        ...pending.message.context,
        cause: error,
      }),
    );
  }
}
