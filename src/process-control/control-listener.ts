import type { Channel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../core';
import { checkQueueIfExists, type ConnectionManager } from '../connection';
import type { TopologyNaming } from '../topology';
import { HEADERS } from '../message';
import type { RecordReader, RecordTrust } from '../records';
import {
  CONTROL_PROTOCOL_VERSION,
  MAX_CONTROL_MESSAGE_BYTES,
  parseControlRequest,
  type ControlReply,
  type ControlRequest,
  type ProcessStatus,
} from './control-protocol';
import { PauseMarkers } from './pause-markers';

/** What the listener needs from the process it speaks for. */
export interface ControlTarget {
  status(): ProcessStatus;
  /** The job queue keys this process consumes: the markers it reads on every connect. */
  queueKeys(): readonly string[];
  /** Takes or releases the operator's hold on a queue (combined with breakers and code, see BreakerPauses). */
  holdByOperator(queueKey: string, held: boolean): Promise<void>;
  /** Closes the process's warren: an operator removes its namespace (the removal marker exists). */
  closeForRemoval(): void;
}

/** Only RabbitMQ's direct reply-to: a forged request cannot make a process publish into a queue of its choice. */
const REPLY_ADDRESS = /^amq\.rabbitmq\.reply-to(\.[A-Za-z0-9+/=._-]{1,500})?$/;

/**
 * A process's ear on the control exchange. On every (re)connect, before the consumers open, it reads
 * the pause markers of its queues (so a process that starts or reconnects during an operator's pause
 * stays paused), then binds an exclusive, auto-delete, server-named queue to the control exchange and
 * answers: a status at once, a sync of a queue's pause after the syncs before it (those of one queue
 * waiting together coalesce into one read). With a signing key only signed requests of the last minute
 * are answered, and replies are signed.
 */
export class ControlListener {
  private readonly markers: PauseMarkers;
  private queue = Promise.resolve();
  private closed = false;
  private readonly reader: RecordReader;
  /** Sync requests waiting for their read, by queue key, with everyone to answer when it is done. */
  private readonly pendingSyncs = new Map<string, ReplyTarget[]>();
  private foreignSyncs = 0;
  private removing = false;

  constructor(
    private readonly naming: TopologyNaming,
    private readonly manager: ConnectionManager,
    private readonly target: ControlTarget,
    private readonly log: Logger,
    private readonly trust: RecordTrust,
  ) {
    this.markers = new PauseMarkers(naming, () => manager.openChannel());
    this.reader = trust.reader('control-request');
  }

  /** The connection's ready hook: sync the paused state from the broker, then listen. */
  async open(generation: number): Promise<void> {
    if (this.closed) return;
    await this.syncAll();
    const channel = await this.manager.openChannel();
    channel.on('error', (error: Error) => this.log.warn({ err: error }, 'control channel error'));
    channel.on('close', () => this.reopenLater(generation));
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
    await channel.bindQueue(queue, this.naming.controlExchange(), '');
    await channel.consume(queue, (message) => this.enqueue(channel, message), { noAck: true });
  }

  /** Stops answering (the channel goes with the connection). */
  close(): void {
    this.closed = true;
  }

  private async syncAll(): Promise<void> {
    const keys = this.target.queueKeys();
    const paused = await this.markers.pausedAmong(keys);
    for (const key of keys) await this.target.holdByOperator(key, paused.has(key));
  }

  /** A control channel closed under a live connection (a broker-side error): listen again. */
  private reopenLater(generation: number): void {
    if (this.closed || !this.manager.isConnected || this.manager.generation !== generation) return;
    setTimeout(() => {
      if (this.closed || this.manager.generation !== generation || !this.manager.isConnected) return;
      this.open(generation).catch((error: unknown) =>
        this.log.warn({ err: error }, 'could not listen on the control exchange again'),
      );
    }, 1000).unref();
  }

  private enqueue(channel: Channel, message: ConsumeMessage | null): void {
    if (message === null) return;
    const { replyTo, correlationId } = message.properties;
    const where = { exchange: this.naming.controlExchange() };
    if (message.content.length > MAX_CONTROL_MESSAGE_BYTES) {
      this.reader.skip('too-large', where);
      return;
    }
    const hasCorrelation = typeof correlationId === 'string' && correlationId.length <= 200;
    const extra = hasCorrelation ? correlationId : '';
    if (!this.reader.accept(message.content, message.properties.headers, where, extra)) return;
    const request = parseControlRequest(message.content);
    const refused =
      'refused' in request
        ? request.refused
        : typeof replyTo !== 'string' || !REPLY_ADDRESS.test(replyTo)
          ? 'no direct reply-to address'
          : !hasCorrelation
            ? 'no correlation id'
            : isSigned(message) && !isRecent(request.t)
              ? 'a signed request older than a minute (or from the future)'
              : undefined;
    if (refused !== undefined) {
      this.reader.skip('malformed', { ...where, why: refused });
      return;
    }
    const valid = request as ControlRequest;
    const target = { replyTo: replyTo as string, correlationId: correlationId as string };
    // A status is answered at once: a flood of requests queued ahead of it cannot hide this process.
    if (valid.command === 'sync-pause') this.coalesceSync(channel, valid.queue!, target);
    else if (valid.command === 'sync-remove') this.syncRemoval(channel, valid, target);
    else this.reply(channel, valid, target);
  }

  /**
   * Requests to sync the same queue while one waits are answered together by that one read of the
   * marker; a flood of distinct keys this process does not run is bounded.
   */
  private coalesceSync(channel: Channel, key: string, target: ReplyTarget): void {
    const waiting = this.pendingSyncs.get(key);
    if (waiting !== undefined) {
      if (waiting.length < MAX_COALESCED_REPLIES) waiting.push(target);
      else this.reader.skip('too-large', { queue: key, why: 'too many requests for one sync' });
      return;
    }
    const isOwn = this.target.queueKeys().includes(key);
    if (!isOwn && this.foreignSyncs >= MAX_FOREIGN_SYNCS) {
      this.reader.skip('out-of-plan', {
        queue: key,
        why: 'too many syncs of queues this process does not run',
      });
      return;
    }
    if (!isOwn) this.foreignSyncs += 1;
    const targets = [target];
    this.pendingSyncs.set(key, targets);
    this.queue = this.queue
      .then(async () => {
        // requests arriving from now on need a read of their own: the marker may change during this one
        this.pendingSyncs.delete(key);
        if (!isOwn) this.foreignSyncs -= 1;
        await this.target.holdByOperator(key, await this.markers.isPaused(key));
        this.log.info({ queue: key }, 'operator pause state synced from the broker');
        for (const t of targets)
          this.reply(channel, { v: CONTROL_PROTOCOL_VERSION, command: 'sync-pause', queue: key }, t);
      })
      .catch((error: unknown) => this.log.warn({ err: error }, 'control request failed'));
  }

  /**
   * Closes this process when the namespace's removal marker exists (an operator removes the namespace),
   * answering first so the operator knows who obeyed; without the marker the request changes nothing.
   */
  private syncRemoval(channel: Channel, request: ControlRequest, target: ReplyTarget): void {
    if (this.removing) return;
    this.queue = this.queue
      .then(async () => {
        if (this.closed || this.removing) return;
        const marked = await checkQueueIfExists(
          () => this.manager.openChannel(),
          this.naming.removalMarker(),
        );
        if (marked === undefined) {
          this.log.info('asked to stop for a namespace removal, but no removal marker exists: ignored');
          return;
        }
        this.removing = true;
        this.log.warn(
          { marker: this.naming.removalMarker() },
          'an operator is removing this namespace: closing',
        );
        this.reply(channel, request, target);
        this.target.closeForRemoval();
      })
      .catch((error: unknown) => this.log.warn({ err: error }, 'control request failed'));
  }

  private reply(channel: Channel, request: ControlRequest, target: ReplyTarget): void {
    const reply: ControlReply = {
      v: CONTROL_PROTOCOL_VERSION,
      command: request.command,
      ...(request.queue !== undefined ? { queue: request.queue } : {}),
      process: this.target.status(),
    };
    const content = Buffer.from(JSON.stringify(reply));
    try {
      channel.sendToQueue(target.replyTo, content, {
        correlationId: target.correlationId,
        contentType: 'application/json',
        headers: this.trust.proof('control-reply', content, target.correlationId),
      });
    } catch (error) {
      this.log.warn({ err: error }, 'could not answer a control request');
    }
  }
}

interface ReplyTarget {
  readonly replyTo: string;
  readonly correlationId: string;
}

/** Replies one sync answers at most; more requests for the same sync are dropped (and counted). */
const MAX_COALESCED_REPLIES = 1000;
/** Syncs of queues this process does not run that may wait at once. */
const MAX_FOREIGN_SYNCS = 16;
/** How old a signed request may be: a copy of one replayed later is refused (RecordTrust's guard covers the minute). */
const MAX_REQUEST_AGE_MS = 60_000;

/** Whether a request carries a proof (which the reader verified): then it must be recent too. */
function isSigned(message: ConsumeMessage): boolean {
  return message.properties.headers?.[HEADERS.proof] !== undefined;
}

function isRecent(t: number | undefined): boolean {
  return typeof t === 'number' && Math.abs(Date.now() - t) <= MAX_REQUEST_AGE_MS;
}
