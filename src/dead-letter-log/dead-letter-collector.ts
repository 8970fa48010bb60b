import type * as amqp from 'amqplib';
import { closeChannel, type Logger } from '../core';
import { withThrowawayChannel, type OutgoingMessage } from '../connection';
import { letterProperties, signedFields } from './log-record';
import type { RecordTrust } from '../records';

/** A job queue whose parking queue feeds the log. */
export interface ParkingQueue {
  readonly key: string;
  readonly deadQueue: string;
}

export interface CollectorDeps {
  readonly openChannel: () => Promise<amqp.Channel>;
  /** Confirmed publish (resolves once the broker confirmed). */
  readonly send: (message: OutgoingMessage) => Promise<void>;
  readonly stream: string;
  readonly publishTimeoutMs: number;
  readonly log: Logger;
  readonly trust: RecordTrust;
}

const PREFETCH = 500;
const DRAIN_IDLE_MS = 1000;

/**
 * Moves dead letters from the parking queues into the log. Every dead letter passes a parking queue
 * first: warren's own (republished to the dead-letter exchange) and the broker's (TTL, length, delivery
 * limit), since RabbitMQ 3.10 does not dead-letter into a stream. Each letter is appended and confirmed
 * before it is acked off the parking queue: a crash in between leaves it in both (at least once), never
 * in neither.
 */
export class DeadLetterCollector {
  private channels: amqp.Channel[] = [];

  constructor(private readonly deps: CollectorDeps) {}

  /**
   * One pass: moves what the parking queues hold now (bounded by their counts at the start, so letters
   * dying meanwhile do not keep it running) and returns how many it moved.
   */
  async collectOnce(queues: readonly ParkingQueue[]): Promise<number> {
    let moved = 0;
    for (const queue of queues) {
      moved += await withThrowawayChannel(this.deps.openChannel, async (channel) => {
        const { messageCount } = await channel.checkQueue(queue.deadQueue);
        return messageCount > 0 ? this.drain(channel, queue, messageCount) : 0;
      });
    }
    return moved;
  }

  /** Keeps moving letters as they arrive, until `close`. Call again after a reconnect. */
  async follow(queues: readonly ParkingQueue[]): Promise<void> {
    this.channels = [];
    for (const queue of queues) {
      const channel = await this.deps.openChannel();
      channel.on('error', () => undefined);
      this.channels.push(channel);
      await channel.prefetch(PREFETCH, false);
      await channel.consume(queue.deadQueue, (message) => {
        if (message) void this.move(channel, queue, message).catch(() => undefined);
      });
    }
  }

  async close(): Promise<void> {
    const channels = this.channels.splice(0);
    await Promise.all(channels.map((c) => closeChannel(c)));
  }

  /**
   * Moves up to `count` letters. Ends early when nothing arrives for a second (another collector may be
   * taking them); a delivery past `count` goes straight back.
   */
  private drain(channel: amqp.Channel, queue: ParkingQueue, count: number): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let received = 0;
      let settled = 0;
      let moved = 0;
      let tag: string | undefined;
      let idle: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(idle);
        if (tag !== undefined) void channel.cancel(tag).catch(() => undefined);
        resolve(moved);
      };
      const watch = () => {
        clearTimeout(idle);
        idle = setTimeout(() => (settled === received ? done() : watch()), DRAIN_IDLE_MS);
      };
      watch();
      void channel
        .prefetch(PREFETCH, false)
        .then(() =>
          channel.consume(queue.deadQueue, (message) => {
            if (!message) return done();
            received += 1;
            if (received > count) return channel.nack(message, false, true);
            watch();
            this.move(channel, queue, message).then((ok) => {
              settled += 1;
              if (ok) moved += 1;
              if (settled >= count) done();
            }, reject);
          }),
        )
        .then((ok) => {
          tag = ok.consumerTag;
        }, reject);
    });
  }

  /** A letter's properties with its proof (when a key is set): signs its body and the fields the log shows. */
  private signed(content: Buffer, properties: amqp.Options.Publish): amqp.Options.Publish {
    const proof = this.deps.trust.proof('dead-letter-log', content, signedFields(properties));
    return { ...properties, headers: { ...properties.headers, ...proof } };
  }

  /** Append confirmed, then ack; not confirmed: back to the parking queue. */
  private async move(
    channel: amqp.Channel,
    queue: ParkingQueue,
    message: amqp.ConsumeMessage,
  ): Promise<boolean> {
    try {
      await this.deps.send({
        exchange: '',
        routingKey: this.deps.stream,
        content: message.content,
        properties: this.signed(message.content, letterProperties(message, queue.key, Date.now())),
        deadline: Date.now() + this.deps.publishTimeoutMs,
        context: { queue: queue.key, jobId: String(message.properties.messageId ?? '') },
      });
      channel.ack(message);
      return true;
    } catch (error) {
      this.deps.log.error(
        { queue: queue.key, err: error },
        'dead letter not confirmed into the log; left parked',
      );
      channel.nack(message, false, true);
      return false;
    }
  }
}
