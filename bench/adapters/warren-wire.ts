import { randomUUID } from 'node:crypto';
import type * as amqp from 'amqplib';
import { jobProperties } from '../../src/message';
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
 */
export class WarrenWireContender extends AmqplibContender {
  override readonly name = 'amqplib-warren-wire';
  private readonly warren: WarrenContender;
  private exchange = '';
  private routingKey = '';

  constructor(env: ContenderEnv) {
    super(env, true); // warren's socket: noDelay
    this.warren = new WarrenContender(env);
  }

  override async setup(namespace: string, features: ContenderFeatures = {}): Promise<void> {
    await this.warren.setup(namespace, features);
    const naming = createNaming(namespace);
    const queue = naming.queue('jobs');
    // the route warren's publisher takes: its jobs exchange, else the default exchange to the queue
    this.exchange = features.jobsExchange ? naming.exchange('jobs') : '';
    this.routingKey = features.jobsExchange ? 'bench.job' : queue;
    await super.setup(queue, { ...features, retryBackoffMs: undefined });
  }

  /** warren declared the queue already (with its own arguments), so this declares nothing. */
  protected override async declare(): Promise<void> {}

  protected override send(
    channel: amqp.ConfirmChannel,
    job: Job,
    onConfirm: (err: unknown) => void,
  ): boolean {
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
