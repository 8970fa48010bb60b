import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as amqp from 'amqplib';
import { publishOneOnChannel, publishOnChannel } from '../../src/connection/channel-publish';
import { BROKER_URL, testNamespace } from '../support/test-broker';

/**
 * warren's publish skips amqplib's options conversion for speed. Whatever it sends must reach a
 * consumer exactly as amqplib's public `publish` would have sent it: same properties, same headers
 * with the same AMQP types, same routing flags.
 */
describe('publishOnChannel', () => {
  let connection: amqp.ChannelModel;
  let channel: amqp.ConfirmChannel;
  const queue = testNamespace('channel-publish');

  before(async () => {
    connection = await amqp.connect(BROKER_URL);
    channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, {
      durable: true,
      autoDelete: false,
      arguments: { 'x-max-priority': 9, 'x-expires': 600_000 },
    });
  });

  after(async () => {
    await channel.deleteQueue(queue).catch(() => undefined);
    await connection.close();
  });

  async function viaBoth(
    options: amqp.Options.Publish,
  ): Promise<{ publicPath: amqp.GetMessage; fastPath: amqp.GetMessage }> {
    const content = Buffer.from(JSON.stringify({ hello: 'world' }));
    await new Promise<void>((resolve, reject) =>
      channel.publish('', queue, content, options, (err: unknown) => (err ? reject(err) : resolve())),
    );
    await new Promise<void>((resolve, reject) =>
      publishOnChannel(channel, '', queue, content, options, (err) => (err ? reject(err) : resolve())),
    );
    const publicPath = await channel.get(queue, { noAck: true });
    const fastPath = await channel.get(queue, { noAck: true });
    assert.ok(publicPath && fastPath, 'both messages arrive');
    return { publicPath, fastPath };
  }

  it('delivers every property and header type exactly as amqplib publish does', async () => {
    const options: amqp.Options.Publish = {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      persistent: true,
      mandatory: true,
      priority: 7,
      correlationId: 'corr-1',
      replyTo: 'reply.here',
      expiration: 60_000,
      messageId: 'job-123',
      timestamp: 1_760_000_000,
      type: 'email.welcome',
      userId: 'guest',
      appId: 'warren-test',
      headers: {
        'warren-attempt': 1,
        'warren-enqueued-at': 1_760_000_000_123,
        small: -5,
        short: 30_000,
        int: 2_000_000_000,
        float: 1.5,
        text: 'é ✓',
        yes: true,
        nested: { a: 1, b: ['x', 2, false] },
        bytes: Buffer.from([1, 2, 3]),
        nothing: null,
        skipped: undefined,
      },
    };
    const { publicPath, fastPath } = await viaBoth(options);
    assert.deepEqual(fastPath.properties, publicPath.properties);
    assert.deepEqual(fastPath.content, publicPath.content);
    assert.equal(fastPath.fields.exchange, publicPath.fields.exchange);
    assert.equal(fastPath.fields.routingKey, publicPath.fields.routingKey);
    assert.equal(fastPath.properties.headers?.['warren-enqueued-at'], 1_760_000_000_123);
    assert.equal(fastPath.properties.deliveryMode, 2);
  });

  it('sends a lone message through the frames encoder as amqplib publish does, and confirms it', async () => {
    const content = Buffer.from(JSON.stringify({ retry: 'me' }));
    const options: amqp.Options.Publish = {
      contentType: 'application/json',
      type: 'email.welcome',
      messageId: 'job-456',
      timestamp: 1_760_000_001,
      persistent: true,
      mandatory: true,
      priority: 3,
      headers: { 'warren-attempt': 2, 'warren-enqueued-at': 1_760_000_001_456, text: 'é ✓', yes: false },
    };
    // a body over frameMax is one the encoder does not cover: amqplib sends it, as before
    const large = Buffer.alloc(200_000, 'x');
    for (const body of [content, large]) {
      await new Promise<void>((resolve, reject) =>
        channel.publish('', queue, body, options, (err: unknown) => (err ? reject(err) : resolve())),
      );
      await new Promise<void>((resolve, reject) =>
        publishOneOnChannel(
          channel,
          { exchange: '', routingKey: queue, content: body, properties: options },
          (err) => (err ? reject(err) : resolve()),
        ),
      );
      const publicPath = await channel.get(queue, { noAck: true });
      const onePath = await channel.get(queue, { noAck: true });
      assert.ok(publicPath && onePath, 'both messages arrive');
      assert.deepEqual(onePath.properties, publicPath.properties);
      assert.deepEqual(onePath.content, body);
      assert.equal(onePath.properties.headers?.['warren-enqueued-at'], 1_760_000_001_456);
    }
  });

  it('matches amqplib when no headers, persistence or expiration are given', async () => {
    const { publicPath, fastPath } = await viaBoth({ persistent: false });
    assert.deepEqual(fastPath.properties, publicPath.properties);
    const bare = await viaBoth({});
    assert.deepEqual(bare.fastPath.properties, bare.publicPath.properties);
  });

  it('hands CC/BCC and a bare deliveryMode to amqplib, which converts them', async () => {
    const { publicPath, fastPath } = await viaBoth({ CC: ['elsewhere'], deliveryMode: 2, headers: { a: 1 } });
    assert.deepEqual(fastPath.properties, publicPath.properties);
    assert.equal(fastPath.properties.deliveryMode, 2);
  });

  it('reports an unroutable mandatory message through basic.return, like amqplib', async () => {
    const returned = new Promise<amqp.Message>((resolve) => channel.once('return', resolve));
    await new Promise<void>((resolve, reject) =>
      publishOnChannel(
        channel,
        '',
        `${queue}-nowhere`,
        Buffer.from('{}'),
        { mandatory: true, messageId: 'lost-1' },
        (err) => (err ? reject(err) : resolve()),
      ),
    );
    const message = await returned;
    assert.equal(message.properties.messageId, 'lost-1');
  });

  it('throws an encoding error synchronously and registers no confirm, like amqplib', async () => {
    const unconfirmedBefore = (channel as unknown as { unconfirmed: unknown[] }).unconfirmed.length;
    assert.throws(
      () =>
        publishOnChannel(
          channel,
          '',
          queue,
          Buffer.from('{}'),
          { headers: { big: 'x'.repeat(70_000) } },
          () => undefined,
        ),
      RangeError,
    );
    assert.equal((channel as unknown as { unconfirmed: unknown[] }).unconfirmed.length, unconfirmedBefore);
    // the channel is still usable
    await new Promise<void>((resolve, reject) =>
      publishOnChannel(channel, '', queue, Buffer.from('{}'), {}, (err) => (err ? reject(err) : resolve())),
    );
    assert.ok(await channel.get(queue, { noAck: true }));
  });
});
