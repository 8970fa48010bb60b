import type * as amqp from 'amqplib';
import { PublishError } from '../core';
import { publishBatchOnChannel, publishOneOnChannel } from './channel-publish';
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
  private currentGeneration = 0;
  /**
   * False from the moment a write finds the channel closing or closed (amqplib throws at once, but
   * emits `close` only later) until the next channel is set up: writing the backlog to it would
   * throw and requeue in a loop that never yields.
   */
  private channelWritable = false;
  private awaitingDrain = false;
  private resumeScheduled = false;
  /** A message sent alone (see blameRefusal): nothing else is written until it is settled. */
  private isolated: Pending | undefined;

  constructor(
    private readonly managed: ManagedChannel<amqp.ConfirmChannel>,
    private readonly manager: ConnectionManager,
    private readonly pending: PendingMessages,
    private readonly onConfirm: ConfirmHandler,
  ) {}

  /** Generation of the current (or last) channel. */
  get generation(): number {
    return this.currentGeneration;
  }

  /** A new channel is set up: its generation, and nothing holds the backlog back but the channel opening. */
  channelOpened(): number {
    this.currentGeneration += 1;
    this.awaitingDrain = false;
    this.channelWritable = true;
    return this.currentGeneration;
  }

  /**
   * The channel closed: nothing is sent alone any more (the message that was, if any, is returned: it
   * was the only one in flight, so the broker's refusal, if that closed it, was of it).
   */
  channelClosed(): Pending | undefined {
    const isolated = this.isolated;
    this.isolated = undefined;
    return isolated;
  }

  /** The channel is being closed on purpose (to renew it): write nothing more to it. */
  channelRenewing(): void {
    this.channelWritable = false;
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
    const generation = this.currentGeneration;
    this.pending.markWritten(pending, generation);
    try {
      const ok = publishOneOnChannel(channel, pending.message, (error: unknown) =>
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
    const pending = this.pending;
    let written = 0;
    while (pending.bufferedCount > 0 && this.canWrite()) {
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
      const next = pending.nextBuffered()!;
      if (!next.settled && next.mustGoAlone) {
        // It was on a channel the broker closed for a message it refused: it goes out alone, after
        // what is in flight, so that if it is the culprit it is the only one lost, and known.
        if (pending.inFlightCount > 0) return;
        pending.takeBuffered();
        this.isolated = next;
        this.write(next);
        written += 1;
      } else if (pending.bufferedCount === 1) {
        pending.takeBuffered();
        if (!next.settled) this.write(next);
        written += 1;
      } else written += this.writeGroup();
    }
  }

  /** The message sent alone was confirmed or nacked: the others may go again. */
  releaseIsolation(pending: Pending): void {
    if (this.isolated !== pending) {
      if (this.pending.inFlightCount <= 1 && this.pending.nextBuffered()?.mustGoAlone)
        setImmediate(() => this.writeBuffered());
      return;
    }
    this.isolated = undefined;
    setImmediate(() => this.writeBuffered());
  }

  /** A message failed (timed out, say): if it was the one sent alone, it must not hold the others back. */
  messageFailed(pending: Pending): void {
    if (this.isolated === pending) this.releaseIsolation(pending);
  }

  /** Up to GROUP_SIZE buffered messages, their frames written to the socket as one chunk. */
  private writeGroup(): number {
    const pending = this.pending;
    const group: Pending[] = [];
    // A message that must go alone ends the group: writeBuffered sends it once nothing is in flight.
    while (group.length < GROUP_SIZE && pending.bufferedCount > 0 && !pending.nextBuffered()!.mustGoAlone) {
      const next = pending.takeBuffered()!;
      if (!next.settled) group.push(next);
    }
    const channel = this.managed.current!;
    const generation = this.currentGeneration;
    for (const member of group) pending.markWritten(member, generation);
    const result = publishBatchOnChannel(
      channel,
      group.map((p) => p.message),
      (index, error) => this.onConfirm(group[index]!, generation, error),
    );
    for (const [index, error] of result.unencodable) this.failUnencodable(group[index]!, error);
    if (result.stoppedAt !== undefined) {
      // The channel is closing or closed: the rest go out again on the next channel, in order.
      this.channelWritable = false;
      for (let i = group.length - 1; i >= result.stoppedAt; i--) pending.requeue(group[i]!, generation);
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
