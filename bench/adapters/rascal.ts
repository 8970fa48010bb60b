import type { Message } from 'amqplib';
import * as rascal from 'rascal';
import type { Job } from '../lib/job';
import { runCallers } from '../lib/callers';
import { connectAmqp, publishPipelined, queueOptions, sendJsonTo } from './amqplib';
import type { Consumer, Contender, ContenderEnv, ContenderFeatures } from './contender';

const PUBLICATION = 'bench-pub';
const SUBSCRIPTION = 'bench-sub';
/** The fail-once scenarios' backoff: a TTL queue dead-lettering back into the job queue. */
const RETRY_PUBLICATION = 'bench-retry';
/**
 * Rascal has no batch API; this bounds the jobs waiting for its channel pool so none hit its 15 s acquire
 * timeout.
 */
const BULK_IN_FLIGHT = 1000;

/**
 * Rascal's defaults throughout, but for what the benchmark pins: the queue type (quorum unless the scenario
 * says classic), confirm channel, persistent messages; a retry backoff is a TTL queue in Rascal's topology.
 */
export class RascalContender implements Contender {
  readonly name = 'rascal';
  private broker?: rascal.BrokerAsPromised;
  private queue = '';
  private features: ContenderFeatures = {};

  constructor(private readonly env: ContenderEnv) {}

  async setup(queue: string, features: ContenderFeatures = {}): Promise<void> {
    this.queue = queue;
    this.features = features;
    const type = features.queueType;
    const queues: Record<string, object> = { [queue]: { assert: true, options: queueOptions(type) } };
    const publications: Record<string, object> = {
      [PUBLICATION]: { queue, confirm: true, options: { persistent: true } },
    };
    const backoffMs = features.retryBackoffMs;
    if (backoffMs) {
      const delayQueue = `${queue}.delay-${backoffMs}`;
      const ttl = {
        'x-message-ttl': backoffMs,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': queue,
      };
      queues[delayQueue] = { assert: true, options: queueOptions(type, ttl) };
      publications[RETRY_PUBLICATION] = { queue: delayQueue, confirm: true, options: { persistent: true } };
    }
    const config = rascal.withDefaultConfig({
      vhosts: {
        '/': {
          connection: { url: this.env.amqpUrl },
          queues,
          publications,
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
      const channel = await connection.createConfirmChannel();
      await publishPipelined(channel, jobs, sendJsonTo(channel, this.queue));
    } finally {
      await connection.close();
    }
  }

  consume(concurrency: number, handler: (job: Job) => void | Promise<void>): Promise<Consumer> {
    return this.subscribe(concurrency, (_message, content, ackOrNack) => {
      const handled = handler(content);
      if (handled) void handled.then(() => ackOrNack());
      else ackOrNack();
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

  /**
   * Rascal's own recovery: republish once (it acks the original after the copy's confirm), then nack; with a
   * backoff, forward once to the TTL queue (acked after the forward's confirm), which dead-letters it back.
   */
  async consumeFailingOnce(concurrency: number, onCompleted: (job: Job) => void): Promise<Consumer> {
    const backoff = Boolean(this.features.retryBackoffMs);
    const first: rascal.RecoveryStrategy = backoff
      ? { strategy: 'forward', publication: RETRY_PUBLICATION, attempts: 1 }
      : { strategy: 'republish', attempts: 1 };
    return this.subscribe(concurrency, (message, content, ackOrNack) => {
      const recovery = (
        message.properties.headers?.rascal as
          | { recovery?: Record<string, { republished?: number; forwarded?: number }> }
          | undefined
      )?.recovery?.[this.queue];
      const retried = (backoff ? recovery?.forwarded : recovery?.republished) ?? 0;
      if (retried === 0) {
        ackOrNack(new Error('first attempt fails'), [first, { strategy: 'nack' }]);
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
