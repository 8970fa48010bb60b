import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as amqp from 'amqplib';
import { PublishError } from '../../src';
import { ConfirmPublisher, ConnectionManager, resolveConnectionOptions } from '../../src/connection';
import { createRecordingLogger } from '../../src/testing';
import { BROKER_URL, testNamespace } from '../support/test-broker';

/**
 * The confirm publisher when the broker closes its channel because of one message whose close text
 * does not say which (here an `expiration` that is no number, 406): the messages lost with the channel
 * go out again one at a time until the refused one is found. It fails alone; every other is confirmed,
 * each sent again at most once; the channel is closed twice, not again and again.
 */
describe('a publish the broker refuses without naming it', () => {
  const queue = testNamespace('refusals');
  let setup: amqp.ChannelModel;
  let manager: ConnectionManager;
  let publisher: ConfirmPublisher;
  const { logger, entries } = createRecordingLogger('debug');

  before(async () => {
    setup = await amqp.connect(BROKER_URL);
    const channel = await setup.createChannel();
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-expires': 600_000 } });
    manager = new ConnectionManager(resolveConnectionOptions({ url: BROKER_URL }), logger);
    publisher = new ConfirmPublisher(manager, { maxBuffered: 1_000, maxMessageBytes: 1 << 27 }, logger);
    manager.useReadySteps([
      { name: 'confirm channel', run: (_model, generation) => publisher.open(generation) },
    ]);
    await manager.start();
  });

  after(async () => {
    await publisher.close();
    await manager.close();
    const channel = await setup.createChannel();
    await channel.deleteQueue(queue).catch(() => undefined);
    await setup.close();
  });

  const send = (id: string, properties: amqp.Options.Publish = {}) =>
    publisher.send({
      exchange: '',
      routingKey: queue,
      content: Buffer.from(id),
      properties: { messageId: id, mandatory: true, ...properties },
      deadline: Date.now() + 10_000,
      context: { jobId: id },
    });

  it('fails the refused message alone and confirms the others, sending each again at most once', async () => {
    const before = Array.from({ length: 20 }, (_, i) => send(`before-${i}`));
    const refused = send('refused', { expiration: 'soon' });
    const afterIt = Array.from({ length: 20 }, (_, i) => send(`after-${i}`));
    await assert.rejects(
      refused,
      (error: unknown) => error instanceof PublishError && error.code === 'PUBLISH_REFUSED',
    );
    await Promise.all([...before, ...afterIt]);
    const closes = entries.filter((e) => e.msg === 'channel error').length;
    assert.ok(closes >= 1 && closes <= 2, `the broker closed the channel ${closes} times`);
    // Each innocent message is in the queue once or twice (stored, then sent again with the rest), never more.
    const copies = new Map<string, number>();
    const check = await setup.createChannel();
    for (;;) {
      const message = await check.get(queue, { noAck: true });
      if (message === false) break;
      const id = String(message.properties.messageId);
      copies.set(id, (copies.get(id) ?? 0) + 1);
    }
    await check.close();
    assert.equal(copies.has('refused'), false);
    assert.equal(copies.size, 40);
    assert.deepEqual(
      [...copies].filter(([, n]) => n > 2),
      [],
    );
  });
});
