import type { Channel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../core';
import type { ConnectionManager } from '../connection';
import type { TopologyNaming } from '../topology';
import {
  CONTROL_PROTOCOL_VERSION,
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
}

/** Only RabbitMQ's direct reply-to: a forged request cannot make a process publish into a queue of its choice. */
const REPLY_ADDRESS = /^amq\.rabbitmq\.reply-to(\.[A-Za-z0-9+/=._-]{1,500})?$/;

/**
 * A process's ear on the control exchange. On every (re)connect, before the consumers open, it reads
 * the pause markers of its queues (so a process that starts or reconnects during an operator's pause
 * stays paused), then binds an exclusive, auto-delete, server-named queue to the control exchange and
 * answers requests one at a time, in order.
 */
export class ControlListener {
  private readonly markers: PauseMarkers;
  private queue = Promise.resolve();
  private closed = false;

  constructor(
    private readonly naming: TopologyNaming,
    private readonly manager: ConnectionManager,
    private readonly target: ControlTarget,
    private readonly log: Logger,
  ) {
    this.markers = new PauseMarkers(naming, () => manager.openChannel());
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
    this.queue = this.queue
      .then(() => this.handle(channel, message))
      .catch((error: unknown) => this.log.warn({ err: error }, 'control request failed'));
  }

  private async handle(channel: Channel, message: ConsumeMessage): Promise<void> {
    const request = parseControlRequest(message.content);
    const { replyTo, correlationId } = message.properties;
    const refused =
      'refused' in request
        ? request.refused
        : typeof replyTo !== 'string' || !REPLY_ADDRESS.test(replyTo)
          ? 'no direct reply-to address'
          : typeof correlationId !== 'string' || correlationId.length > 200
            ? 'no correlation id'
            : undefined;
    if (refused !== undefined) {
      this.log.warn({ reason: refused }, 'ignored a malformed control message');
      return;
    }
    const valid = request as ControlRequest;
    if (valid.command === 'sync-pause') {
      const key = valid.queue!;
      await this.target.holdByOperator(key, await this.markers.isPaused(key));
      this.log.info({ queue: key }, 'operator pause state synced from the broker');
    }
    const reply: ControlReply = {
      v: CONTROL_PROTOCOL_VERSION,
      command: valid.command,
      ...(valid.queue !== undefined ? { queue: valid.queue } : {}),
      process: this.target.status(),
    };
    channel.sendToQueue(replyTo as string, Buffer.from(JSON.stringify(reply)), {
      correlationId: correlationId as string,
      contentType: 'application/json',
    });
  }
}
