import { once } from 'node:events';
import * as amqp from 'amqplib';
import type { Job } from '../job';
import type { Consumer, Contender, ContenderEnv } from './contender';

export const QUORUM_QUEUE: amqp.Options.AssertQueue = {
  durable: true,
  arguments: { 'x-queue-type': 'quorum' },
};
const PUBLISH_OPTIONS: amqp.Options.Publish = { persistent: true, contentType: 'application/json' };
const ATTEMPT_HEADER = 'bench-attempt';

/** With a connect timeout, so an unresponsive broker fails the run instead of stalling the suite. */
export function connectAmqp(url: string): Promise<amqp.ChannelModel> {
  return amqp.connect(url, { timeout: 10_000 });
}

/** The floor: one confirm channel, the callback per message is the only bookkeeping. */
export class AmqplibContender implements Contender {
  readonly name = 'amqplib';
  private connection?: amqp.ChannelModel;
  private channel?: amqp.ConfirmChannel;
  private queue = '';

  constructor(private readonly env: ContenderEnv) {}

  async setup(queue: string): Promise<void> {
    this.queue = queue;
    this.connection = await connectAmqp(this.env.amqpUrl);
    this.connection.on('error', () => undefined);
    this.channel = await this.connection.createConfirmChannel();
    await this.channel.assertQueue(queue, QUORUM_QUEUE);
  }

  publish(job: Job): Promise<void> {
    const channel = this.requireChannel();
    return new Promise((resolve, reject) => {
      channel.sendToQueue(this.queue, Buffer.from(JSON.stringify(job)), PUBLISH_OPTIONS, (err) =>
        err ? reject(err) : resolve(),
      );
    });
  }

  async publishBulk(jobs: Job[]): Promise<void> {
    await publishPipelined(this.requireChannel(), this.queue, jobs);
  }

  prefill(jobs: Job[]): Promise<void> {
    return this.publishBulk(jobs);
  }

  async consume(concurrency: number, handler: (job: Job) => void): Promise<Consumer> {
    const channel = await this.requireConnection().createChannel();
    await channel.prefetch(concurrency);
    const { consumerTag } = await channel.consume(this.queue, (msg) => {
      if (!msg) return;
      handler(JSON.parse(msg.content.toString()) as Job);
      channel.ack(msg);
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
   * The floor for a retry: a failed delivery is republished with an attempt header on a confirm
   * channel and acked once the copy is confirmed (at-least-once, as warren and Rascal do it).
   */
  async consumeFailingOnce(concurrency: number, onCompleted: (job: Job) => void): Promise<Consumer> {
    const connection = this.requireConnection();
    const channel = await connection.createChannel();
    const republisher = await connection.createConfirmChannel();
    await channel.prefetch(concurrency);
    const { consumerTag } = await channel.consume(this.queue, (msg) => {
      if (!msg) return;
      const job = JSON.parse(msg.content.toString()) as Job;
      if (msg.properties.headers?.[ATTEMPT_HEADER] === undefined) {
        const properties = { ...PUBLISH_OPTIONS, headers: { [ATTEMPT_HEADER]: 2 } };
        republisher.sendToQueue(this.queue, msg.content, properties, (err) =>
          err ? channel.nack(msg) : channel.ack(msg),
        );
        return;
      }
      onCompleted(job);
      channel.ack(msg);
    });
    return {
      async stop() {
        await channel.cancel(consumerTag);
        await channel.close();
        await republisher.close();
      },
    };
  }

  async teardown(opts: { deleteQueue: boolean }): Promise<void> {
    if (opts.deleteQueue && this.channel) await this.channel.deleteQueue(this.queue);
    await this.connection?.close();
  }

  private requireConnection(): amqp.ChannelModel {
    if (!this.connection) throw new Error('amqplib contender used before setup()');
    return this.connection;
  }

  private requireChannel(): amqp.ConfirmChannel {
    if (!this.channel) throw new Error('amqplib contender used before setup()');
    return this.channel;
  }
}

/** All jobs in flight on one confirm channel, pausing only when the socket buffer asks to (drain). */
export async function publishPipelined(
  channel: amqp.ConfirmChannel,
  queue: string,
  jobs: Job[],
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
    const writable = channel.sendToQueue(queue, Buffer.from(JSON.stringify(job)), PUBLISH_OPTIONS, onConfirm);
    if (!writable) await once(channel, 'drain');
  }
  await allConfirmed;
  if (failure) throw failure;
}
