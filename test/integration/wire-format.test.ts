import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, type JobContext, type JobHandler } from '../../src';
import { cleanup, rawConnection, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: { email: { bind: { exchange: 'jobs', pattern: 'email.*' } } },
});

@Job('email.welcome', { queue: 'email' })
class WelcomeEmail implements JobHandler<{ userId: string }> {
  readonly runs: { data: { userId: string }; ctx: JobContext }[] = [];
  async handle(data: { userId: string }, ctx: JobContext) {
    this.runs.push({ data, ctx });
  }
}

describe('the wire format, from a plain AMQP client', () => {
  afterEach(cleanup);

  it('runs a job published with plain amqplib exactly as the README describes', async () => {
    const handler = new WelcomeEmail();
    const warren = await testWarren({ topology, handlers: [handler] });
    await warren.start();
    const exchange = `${planOf(warren).naming.namespace}.jobs`;

    // --- as in the README's "Wire format" section ---
    const connection = await rawConnection();
    const channel = await connection.createConfirmChannel();
    channel.publish(exchange, 'email.welcome', Buffer.from(JSON.stringify({ userId: '42' })), {
      contentType: 'application/json',
      type: 'email.welcome',
      messageId: 'welcome-42',
      persistent: true,
      mandatory: true,
      timestamp: Math.floor(Date.now() / 1000),
    });
    await channel.waitForConfirms();
    await connection.close();
    // ---

    await waitFor(() => handler.runs.length === 1, { what: 'the handler to run' });
    const { data, ctx } = handler.runs[0]!;
    assert.deepEqual(data, { userId: '42' });
    assert.equal(ctx.jobId, 'welcome-42');
    assert.equal(ctx.attempt, 1);
    assert.equal(ctx.name, 'email.welcome');
  });

  it('publishes what a plain consumer can read: JSON body, type, message id and warren headers', async () => {
    const warren = await testWarren({ topology, jobs: [WelcomeEmail] });
    const before = Date.now();
    await warren.publish(
      'email.welcome',
      { userId: '7' },
      { jobId: 'w-7', correlationId: 'req-1', headers: { tenant: 'acme' } },
    );
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    const message = await channel.get(planOf(warren).jobs.get('email.welcome')!.queueName, { noAck: true });
    await connection.close();
    assert.ok(message);
    assert.deepEqual(JSON.parse(message.content.toString('utf8')), { userId: '7' });
    const p = message.properties;
    assert.equal(p.contentType, 'application/json');
    assert.equal(p.type, 'email.welcome');
    assert.equal(p.messageId, 'w-7');
    assert.equal(p.correlationId, 'req-1');
    assert.equal(p.deliveryMode, 2);
    assert.equal(p.headers!['warren-attempt'], 1);
    assert.ok((p.headers!['warren-enqueued-at'] as number) >= before);
    assert.equal(p.headers!.tenant, 'acme');
    assert.equal(message.fields.routingKey, 'email.welcome');
  });
});
