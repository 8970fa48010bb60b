import type * as amqp from 'amqplib';
import { ConfigurationError, type Logger } from '../core';
import { withThrowawayChannel, type ConfirmPublisher, type ConnectionManager } from '../connection';
import { HEADERS, replayProperties } from '../message';
import { isJobQueue, type PlannedJobQueue, type TopologyPlan } from '../topology';

/** A dead letter as `list` shows it. */
export interface DeadLetter {
  readonly jobId: string | undefined;
  readonly name: string | undefined;
  readonly queue: string;
  /**
   * warren's reason, or the broker's (`delivery-limit`, `expired`, `rejected`) for letters the broker
   * dead-lettered.
   */
  readonly reason: string;
  readonly lastError: string | undefined;
  readonly attempt: number | undefined;
  readonly deadAt: number | undefined;
  readonly data: unknown;
  readonly headers: Readonly<Record<string, unknown>>;
}

/**
 * What `warren.deadLetters.replay(queue, options)` replays from a parking queue (`<queue>.dead`). Named
 * `ReplayOptions` before 0.2, like the dead-letter log's different options in warren/ops.
 */
export interface ParkingReplayOptions {
  /** Replay only this job; default every dead letter of the queue. */
  readonly jobId?: string;
  /** Replay at most this many. */
  readonly limit?: number;
}

/**
 * The parking queues: list without losing, replay to the original queue (attempts reset, death
 * headers stripped), purge. Replays are confirmed before the dead letter is acked.
 */
export class DeadLetters {
  constructor(
    private readonly plan: TopologyPlan,
    private readonly manager: ConnectionManager,
    private readonly confirms: ConfirmPublisher,
    private readonly publishTimeoutMs: number,
    private readonly log: Logger,
  ) {}

  /** Peeks at up to `limit` dead letters of a queue (by its topology key); they stay where they are. */
  async list(queueKey: string, options: { limit?: number } = {}): Promise<DeadLetter[]> {
    const queue = this.queue(queueKey);
    const limit = options.limit ?? 100;
    return this.withChannel(async (channel) => {
      const letters: DeadLetter[] = [];
      while (letters.length < limit) {
        const message = await channel.get(queue.deadQueue, { noAck: false });
        if (message === false) break;
        letters.push(describe(message, queueKey));
      }
      // Closing the channel returns every unacked message to the queue, in order.
      return letters;
    });
  }

  /** Sends dead letters back to their queue with attempts reset. Returns how many were replayed. */
  async replay(queueKey: string, options: ParkingReplayOptions = {}): Promise<number> {
    const queue = this.queue(queueKey);
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    return this.withChannel(async (channel) => {
      let replayed = 0;
      // Only what was there when the replay started: a replayed letter that dies again at once
      // (undecodable, unknown job) lands behind these and must not be replayed again in this call.
      // Letters read and skipped stay unacked on this channel, so they are not read twice either.
      const present = (await channel.checkQueue(queue.deadQueue)).messageCount;
      for (let read = 0; read < present && replayed < limit; read++) {
        const message = await channel.get(queue.deadQueue, { noAck: false });
        if (message === false) break;
        if (options.jobId !== undefined && message.properties.messageId !== options.jobId) continue;
        await this.confirms.send({
          exchange: '',
          routingKey: queue.name,
          content: message.content,
          properties: replayProperties(message.properties),
          deadline: Date.now() + this.publishTimeoutMs,
          context: { jobId: message.properties.messageId, jobName: message.properties.type, queue: queueKey },
        });
        channel.ack(message);
        replayed += 1;
      }
      this.log.info({ queue: queueKey, replayed, jobId: options.jobId }, 'dead letters replayed');
      return replayed;
    });
  }

  /** Deletes every dead letter of a queue. Returns how many there were. */
  async purge(queueKey: string): Promise<number> {
    const queue = this.queue(queueKey);
    return this.withChannel(async (channel) => (await channel.purgeQueue(queue.deadQueue)).messageCount);
  }

  /** How many dead letters a queue holds. */
  async count(queueKey: string): Promise<number> {
    const queue = this.queue(queueKey);
    return this.withChannel(async (channel) => (await channel.checkQueue(queue.deadQueue)).messageCount);
  }

  private queue(queueKey: string): PlannedJobQueue {
    const queue = this.plan.queues.filter(isJobQueue).find((q) => q.key === queueKey);
    if (!queue)
      throw new ConfigurationError(
        `unknown queue '${queueKey}' (declared: ${this.plan.queues
          .filter((q) => q.role === 'job')
          .map((q) => q.key)
          .join(', ')})`,
      );
    return queue;
  }

  private withChannel<T>(work: (channel: amqp.Channel) => Promise<T>): Promise<T> {
    return withThrowawayChannel(() => this.manager.openChannel(), work);
  }
}

function describe(message: amqp.GetMessage, queue: string): DeadLetter {
  const headers = (message.properties.headers ?? {}) as Record<string, unknown>;
  let data: unknown;
  try {
    data = JSON.parse(message.content.toString('utf8'));
  } catch {
    data = message.content.toString('utf8');
  }
  const brokerReason =
    typeof headers['x-first-death-reason'] === 'string'
      ? String(headers['x-first-death-reason']).replace('_', '-')
      : undefined;
  return {
    jobId: message.properties.messageId as string | undefined,
    name: message.properties.type as string | undefined,
    queue,
    reason:
      typeof headers[HEADERS.deadReason] === 'string'
        ? (headers[HEADERS.deadReason] as string)
        : (brokerReason ?? 'unknown'),
    lastError:
      typeof headers[HEADERS.lastError] === 'string' ? (headers[HEADERS.lastError] as string) : undefined,
    attempt: typeof headers[HEADERS.attempt] === 'number' ? (headers[HEADERS.attempt] as number) : undefined,
    deadAt: typeof headers[HEADERS.deadAt] === 'number' ? (headers[HEADERS.deadAt] as number) : undefined,
    data,
    headers,
  };
}
