import { randomUUID } from 'node:crypto';
import type * as amqp from 'amqplib';
import { HEADERS, jobProperties, republishProperties } from '../../src/message';
import { createNaming } from '../../src/topology';
import type { Job } from '../lib/job';
import { AmqplibContender } from './amqplib';
import type { ContenderEnv, ContenderFeatures } from './contender';
import { WarrenContender } from './warren';

/**
 * Raw amqplib publishing warren's exact messages (issue 30): the properties and headers warren's publisher
 * sets (type, message_id, timestamp, `warren-attempt`, `warren-enqueued-at`, persistent, mandatory, JSON) to
 * the queue warren declared, through its jobs exchange when the scenario routes through one. Its figures
 * beside `amqplib` are the wire contract's cost at the broker; beside `warren`, warren's client-side cost.
 * The topology is warren's own (declared and deleted by a warren instance); the rest is the raw floor.
 *
 * In the retry scenarios it fails each job's first attempt as warren's worker does at the broker: the copy
 * carries warren's republished properties (`warren-attempt` 2, the rest as delivered) to warren's route
 * (its queue at once, or the hold of the backoff, `warren.delay.hold.<queue>.<ms>ms`), confirmed before the
 * ack. Beside `amqplib` (its own attempt header, its own TTL queue) that is the broker's cost of warren's
 * contract and topology on the retry path; beside `warren`, warren's client cost there.
 *
 * As `amqplib-warren-topology` (`ownMessages`) it sends raw amqplib's own messages (its two properties, its
 * attempt header) through warren's topology (warren's queue with its arguments, warren's hold): beside
 * `amqplib` and `amqplib-warren-wire` it tells the topology's broker cost from the messages'.
 */
export class WarrenWireContender extends AmqplibContender {
  override readonly name: string;
  private readonly warren: WarrenContender;
  private exchange = '';
  private routingKey = '';
  /** Where a failed first attempt goes: warren's queue, or its hold for the scenario's backoff. */
  private retryRoute = '';

  constructor(
    env: ContenderEnv,
    private readonly ownMessages = false,
  ) {
    super(env, true); // warren's socket: noDelay
    this.name = ownMessages ? 'amqplib-warren-topology' : 'amqplib-warren-wire';
    this.warren = new WarrenContender(env);
  }

  override async setup(namespace: string, features: ContenderFeatures = {}): Promise<void> {
    await this.warren.setup(namespace, features);
    const naming = createNaming(namespace);
    const queue = naming.queue('jobs');
    // the route warren's publisher takes: its jobs exchange, else the default exchange to the queue
    this.exchange = features.jobsExchange ? naming.exchange('jobs') : '';
    this.routingKey = features.jobsExchange ? 'bench.job' : queue;
    const backoffMs = features.retryBackoffMs;
    this.retryRoute = backoffMs ? naming.delayHold(naming.queue('jobs'), backoffMs) : naming.queue('jobs');
    await super.setup(queue, { ...features, retryBackoffMs: undefined });
  }

  /** warren's route for the copy: its queue, or its hold for the backoff. */
  protected override retryTarget(): string {
    return this.retryRoute;
  }

  protected override attemptOf(msg: amqp.ConsumeMessage): number {
    if (this.ownMessages) return super.attemptOf(msg);
    return Number(msg.properties.headers?.[HEADERS.attempt] ?? 1);
  }

  /** warren's republished properties: as delivered, `warren-attempt` the next. */
  protected override retryProperties(msg: amqp.ConsumeMessage, attempt: number): amqp.Options.Publish {
    if (this.ownMessages) return super.retryProperties(msg, attempt);
    return republishProperties(msg.properties, { [HEADERS.attempt]: attempt + 1 });
  }

  /** warren declared the queue already (with its own arguments), so this declares nothing. */
  protected override async declare(): Promise<void> {}

  protected override send(
    channel: amqp.ConfirmChannel,
    job: Job,
    onConfirm: (err: unknown) => void,
  ): boolean {
    if (this.ownMessages) return super.send(channel, job, onConfirm);
    const body = Buffer.from(JSON.stringify(job));
    const properties = jobProperties({
      name: 'bench.job',
      jobId: randomUUID(),
      body,
      attempt: 1,
      enqueuedAt: Date.now(),
    });
    return channel.publish(this.exchange, this.routingKey, body, properties, onConfirm);
  }

  override async teardown(opts: { deleteQueue: boolean }): Promise<void> {
    await super.teardown({ deleteQueue: false });
    await this.warren.teardown(opts);
  }
}
