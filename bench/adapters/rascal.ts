import type { Message } from 'amqplib';
import * as rascal from 'rascal';
import type { Job } from '../job';
import { runCallers } from '../callers';
import { connectAmqp, publishPipelined, QUORUM_QUEUE } from './amqplib';
import type { Consumer, Contender, ContenderEnv } from './contender';

const PUBLICATION = 'bench-pub';
const SUBSCRIPTION = 'bench-sub';
/**
 * Rascal has no batch API; this bounds the jobs waiting for its channel pool so none hit its 15 s acquire
 * timeout.
 */
const BULK_IN_FLIGHT = 1000;

/**
 * Rascal's defaults throughout, but for what the benchmark pins: quorum queue, confirm channel, persistent
 * messages.
 */
export class RascalContender implements Contender {
  readonly name = 'rascal';
  private broker?: rascal.BrokerAsPromised;
  private queue = '';

  constructor(private readonly env: ContenderEnv) {}

  async setup(queue: string): Promise<void> {
    this.queue = queue;
    const config = rascal.withDefaultConfig({
      vhosts: {
        '/': {
          connection: { url: this.env.amqpUrl },
          queues: { [queue]: { assert: true, options: QUORUM_QUEUE } },
          publications: { [PUBLICATION]: { queue, confirm: true, options: { persistent: true } } },
          subscriptions: { [SUBSCRIPTION]: { queue } },
        },
      },
    });
    this.broker = await rascal.BrokerAsPromised.create(config);
    this.broker.on('error', (err: Error) => console.error(`rascal broker error: ${err.message}`));
  }

  async publish(job: Job): Promise<void> {
    const publication = await this.requireBroker().publish(PUBLICATION, job);
    await new Promise<void>((resolve, reject) => {
      publication.on('success', () => resolve()).on('error', (err) => reject(err));
    });
  }

  publishBulk(jobs: Job[]): Promise<void> {
    return runCallers(BULK_IN_FLIGHT, jobs.length, (i) => this.publish(jobs[i]));
  }

  /**
   * Untimed, so it bypasses Rascal's pool (at most 5 confirms in flight) with raw amqplib,
   * sending what Rascal's JSON publication sends: persistent, application/json.
   */
  async prefill(jobs: Job[]): Promise<void> {
    const connection = await connectAmqp(this.env.amqpUrl);
    try {
      await publishPipelined(await connection.createConfirmChannel(), this.queue, jobs);
    } finally {
      await connection.close();
    }
  }

  consume(concurrency: number, handler: (job: Job) => void): Promise<Consumer> {
    return this.subscribe(concurrency, (_message, content, ackOrNack) => {
      handler(content);
      ackOrNack();
    });
  }

  private async subscribe(
    concurrency: number,
    onMessage: (message: Message, content: Job, ackOrNack: rascal.AckOrNack) => void,
  ): Promise<Consumer> {
    const subscription = await this.requireBroker().subscribe(SUBSCRIPTION, { prefetch: concurrency });
    subscription.on('error', (err: Error) => console.error(`rascal subscription error: ${err.message}`));
    const subscribed = new Promise((resolve) => subscription.once('subscribed', resolve));
    subscription.on('message', onMessage);
    await subscribed;
    return { stop: () => subscription.cancel() };
  }

  async prefillRetryable(jobs: Job[]): Promise<void> {
    await this.prefill(jobs);
  }

  /** Rascal's own recovery: republish once (it acks the original after the copy's confirm), then nack. */
  async consumeFailingOnce(concurrency: number, onCompleted: (job: Job) => void): Promise<Consumer> {
    return this.subscribe(concurrency, (message, content, ackOrNack) => {
      const republished =
        (
          message.properties.headers?.rascal as
            | { recovery?: Record<string, { republished?: number }> }
            | undefined
        )?.recovery?.[this.queue]?.republished ?? 0;
      if (republished === 0) {
        ackOrNack(new Error('first attempt fails'), [
          { strategy: 'republish', attempts: 1 },
          { strategy: 'nack' },
        ]);
        return;
      }
      onCompleted(content);
      ackOrNack();
    });
  }

  async teardown(opts: { deleteQueue: boolean }): Promise<void> {
    if (!this.broker) return;
    // nuke deletes the queues Rascal declared, then shuts down
    await (opts.deleteQueue ? this.broker.nuke() : this.broker.shutdown());
  }

  private requireBroker(): rascal.BrokerAsPromised {
    if (!this.broker) throw new Error('rascal contender used before setup()');
    return this.broker;
  }
}
