import { once } from 'node:events';
import * as amqp from 'amqplib';
import type { Job } from '../lib/job';
import type { Consumer, Contender, ContenderEnv, ContenderFeatures, QueueType } from './contender';

/** A durable queue of the type a scenario asks for (quorum unless it says otherwise). */
export function queueOptions(
  type: QueueType = 'quorum',
  args: Record<string, unknown> = {},
): amqp.Options.AssertQueue {
  return { durable: true, arguments: { 'x-queue-type': type, ...args } };
}
const PUBLISH_OPTIONS: amqp.Options.Publish = { persistent: true, contentType: 'application/json' };
const ATTEMPT_HEADER = 'bench-attempt';

/**
 * With a connect timeout, so an unresponsive broker fails the run instead of stalling the suite.
 * `noDelay` turns Nagle's algorithm off (amqplib leaves it on).
 */
export function connectAmqp(url: string, noDelay = false): Promise<amqp.ChannelModel> {
  return amqp.connect(url, { timeout: 10_000, noDelay });
}

/**
 * The floor: one confirm channel, the callback per message is the only bookkeeping. Twice in the suite:
 * `amqplib` with amqplib's socket defaults (Nagle on), `amqplib-nodelay` with `noDelay: true`.
 */
export class AmqplibContender implements Contender {
  readonly name: string;
  private connection?: amqp.ChannelModel;
  private channel?: amqp.ConfirmChannel;
  protected queue = '';
  protected features: ContenderFeatures = {};
  private readonly holdingQueues = new Set<string>();

  /**
   * `name`: `amqplib-control` is the same contender again, the noise floor of a run. `atLeastOnce`: a quorum
   * TTL queue dead-letters at-least-once (with reject-publish overflow, as RabbitMQ requires), the guarantee
   * of warren's quorum holds, where RabbitMQ's default is at-most-once.
   */
  constructor(
    private readonly env: ContenderEnv,
    private readonly noDelay = false,
    name?: string,
    private readonly atLeastOnce = false,
  ) {
    this.name = name ?? (noDelay ? 'amqplib-nodelay' : 'amqplib');
  }

  async setup(queue: string, features: ContenderFeatures = {}): Promise<void> {
    this.queue = queue;
    this.features = features;
    this.connection = await connectAmqp(this.env.amqpUrl, this.noDelay);
    this.connection.on('error', () => undefined);
    this.channel = await this.connection.createConfirmChannel();
    await this.declare(this.channel);
  }

  /** The job queue, and the retry's TTL queue when the scenario has a backoff. */
  protected async declare(channel: amqp.ConfirmChannel): Promise<void> {
    await channel.assertQueue(this.queue, queueOptions(this.features.queueType));
    if (this.features.retryBackoffMs) await this.declareHolding(this.features.retryBackoffMs);
  }

  /** Writes one job; false when the socket buffer is full (wait for `drain`). */
  protected send(channel: amqp.ConfirmChannel, job: Job, onConfirm: (err: unknown) => void): boolean {
    return channel.sendToQueue(this.queue, Buffer.from(JSON.stringify(job)), PUBLISH_OPTIONS, onConfirm);
  }

  /**
   * The raw floor for a delayed job: a holding queue per delay, its queue-wide TTL the delay,
   * dead-lettering into the job's queue (one of warren's delay levels, without the levels). Only
   * the single-job delay scenario uses it: a burst of random delays would need a queue per delay.
   */
  async prepareDelays(delaysMs: readonly number[]): Promise<void> {
    for (const delayMs of delaysMs) await this.declareHolding(delayMs);
  }

  async publishDelayedAlone(job: Job, delayMs: number): Promise<void> {
    const channel = this.requireChannel();
    const holding = await this.declareHolding(delayMs);
    await new Promise<void>((resolve, reject) => {
      channel.sendToQueue(holding, Buffer.from(JSON.stringify(job)), PUBLISH_OPTIONS, (err) =>
        err ? reject(err) : resolve(),
      );
    });
  }

  private async declareHolding(delayMs: number): Promise<string> {
    const channel = this.requireChannel();
    const holding = this.holdingQueue(delayMs);
    if (!this.holdingQueues.has(holding)) {
      await channel.assertQueue(
        holding,
        queueOptions(this.features.queueType, {
          'x-message-ttl': delayMs,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': this.queue,
          ...(this.atLeastOnce && (this.features.queueType ?? 'quorum') === 'quorum'
            ? { 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' }
            : {}),
        }),
      );
      this.holdingQueues.add(holding);
    }
    return holding;
  }

  /** A handler that publishes a follow-up: written on the confirm channel, the delivery acked on its confirm. */
  async consumeWithFollowUp(next: (job: Job) => Job | undefined): Promise<Consumer> {
    const channel = await this.requireConnection().createChannel();
    const publisher = this.requireChannel();
    await channel.prefetch(1);
    const { consumerTag } = await channel.consume(this.queue, (msg) => {
      if (!msg) return;
      const followUp = next(JSON.parse(msg.content.toString()) as Job);
      if (!followUp) return channel.ack(msg);
      publisher.sendToQueue(this.queue, Buffer.from(JSON.stringify(followUp)), PUBLISH_OPTIONS, (err) =>
        err ? channel.nack(msg) : channel.ack(msg),
      );
    });
    return {
      async stop() {
        await channel.cancel(consumerTag);
        await channel.close();
      },
    };
  }

  publish(job: Job): Promise<void> {
    const channel = this.requireChannel();
    return new Promise((resolve, reject) => {
      this.send(channel, job, (err) => (err ? reject(err) : resolve()));
    });
  }

  async publishBulk(jobs: Job[]): Promise<void> {
    const channel = this.requireChannel();
    await publishPipelined(channel, jobs, (job, onConfirm) => this.send(channel, job, onConfirm));
  }

  prefill(jobs: Job[]): Promise<void> {
    return this.publishBulk(jobs);
  }

  async consume(concurrency: number, handler: (job: Job) => void | Promise<void>): Promise<Consumer> {
    const channel = await this.requireConnection().createChannel();
    await channel.prefetch(concurrency);
    const { consumerTag } = await channel.consume(this.queue, (msg) => {
      if (!msg) return;
      const handled = handler(JSON.parse(msg.content.toString()) as Job);
      // an async handler (the throughput suite's) is awaited before the ack, as an application would
      if (handled) void handled.then(() => channel.ack(msg));
      else channel.ack(msg);
    });
    return {
      async stop() {
        await channel.cancel(consumerTag);
        await channel.close();
      },
    };
  }

  prefillRetryable(jobs: Job[]): Promise<void> {
    return this.prefill(jobs);
  }

  /**
   * The floor for a retry: the handler's first attempt fails (failFirstAttempt), and the failed delivery is
   * republished with an attempt header on a confirm channel and acked once the copy is confirmed
   * (at-least-once, as warren and Rascal do it). With a
   * backoff, the copy goes through one TTL queue of that delay, which dead-letters it back; without, straight
   * back to the queue.
   */
  async consumeFailingOnce(concurrency: number, onCompleted: (job: Job) => void): Promise<Consumer> {
    const connection = this.requireConnection();
    const channel = await connection.createChannel();
    const republisher = await connection.createConfirmChannel();
    await channel.prefetch(concurrency);
    const target = this.retryTarget();
    const { consumerTag } = await channel.consume(this.queue, (msg) => {
      if (!msg) return;
      const job = JSON.parse(msg.content.toString()) as Job;
      const attempt = this.attemptOf(msg);
      failFirstAttempt(job, attempt).then(
        () => {
          onCompleted(job);
          channel.ack(msg);
        },
        () => {
          const properties = this.retryProperties(msg, attempt);
          republisher.sendToQueue(target, msg.content, properties, (err) =>
            err ? channel.nack(msg) : channel.ack(msg),
          );
        },
      );
    });
    return {
      async stop() {
        await channel.cancel(consumerTag);
        await channel.close();
        await republisher.close();
      },
    };
  }

  /** Where a failed first attempt's copy goes: the TTL queue of the backoff, or straight back. */
  protected retryTarget(): string {
    const backoffMs = this.features.retryBackoffMs;
    return backoffMs ? this.holdingQueue(backoffMs) : this.queue;
  }

  /** The attempt a delivery is (this contender's own header). */
  protected attemptOf(msg: amqp.ConsumeMessage): number {
    return msg.properties.headers?.[ATTEMPT_HEADER] === undefined ? 1 : 2;
  }

  /** The copy's properties: this contender's own attempt header. */
  protected retryProperties(_msg: amqp.ConsumeMessage, attempt: number): amqp.Options.Publish {
    return { ...PUBLISH_OPTIONS, headers: { [ATTEMPT_HEADER]: attempt + 1 } };
  }

  async teardown(opts: { deleteQueue: boolean }): Promise<void> {
    if (opts.deleteQueue && this.channel) await this.channel.deleteQueue(this.queue);
    for (const holding of opts.deleteQueue ? this.holdingQueues : [])
      await this.channel?.deleteQueue(holding);
    await this.connection?.close();
  }

  private holdingQueue(delayMs: number): string {
    return `${this.queue}.delay-${delayMs}`;
  }

  protected requireConnection(): amqp.ChannelModel {
    if (!this.connection) throw new Error('amqplib contender used before setup()');
    return this.connection;
  }

  private requireChannel(): amqp.ConfirmChannel {
    if (!this.channel) throw new Error('amqplib contender used before setup()');
    return this.channel;
  }
}

/**
 * The retry scenarios' handler as an application writes it, the same as warren's and Rascal's: an async
 * function whose first attempt fails with an Error (its stack captured, as every thrown Error's is).
 */
async function failFirstAttempt(_job: Job, attempt: number): Promise<void> {
  if (attempt === 1) throw new Error('first attempt fails');
}

/**
 * All jobs in flight on one confirm channel, pausing only when the socket buffer asks to (drain). `send`
 * writes one (default: JSON to `queue` through the default exchange).
 */
export async function publishPipelined(
  channel: amqp.ConfirmChannel,
  jobs: Job[],
  send: (job: Job, onConfirm: (err: unknown) => void) => boolean,
): Promise<void> {
  if (jobs.length === 0) return;
  let pending = jobs.length;
  let failure: unknown;
  let settle!: () => void;
  const allConfirmed = new Promise<void>((resolve) => (settle = resolve));
  const onConfirm = (err: unknown) => {
    if (err && !failure) failure = err;
    if (--pending === 0) settle();
  };
  for (const job of jobs) {
    const writable = send(job, onConfirm);
    if (!writable) await once(channel, 'drain');
  }
  await allConfirmed;
  if (failure) throw failure;
}

/** What `sendToQueue` of a JSON job to `queue` looks like as `publishPipelined`'s `send`. */
export function sendJsonTo(channel: amqp.ConfirmChannel, queue: string) {
  return (job: Job, onConfirm: (err: unknown) => void): boolean =>
    channel.sendToQueue(queue, Buffer.from(JSON.stringify(job)), PUBLISH_OPTIONS, onConfirm);
}
