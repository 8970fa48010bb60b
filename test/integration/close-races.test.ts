import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTopology } from '../../src';
import { closeChannel, ConnectionError } from '../../src/core';
import { createOps } from '../../src/ops';
import { readStream } from '../../src/streams';
import { BROKER_URL, cleanup, rawConnection, testNamespace, testWarren } from '../support/test-broker';

/** Resolves to 'settled' when `promise` settles within `ms`, else to 'hung'. */
const settlesWithin = (promise: Promise<unknown>, ms: number) =>
  Promise.race([
    promise.then(
      () => 'settled',
      () => 'settled',
    ),
    sleep(ms).then(() => 'hung'),
  ]);

/**
 * A connection that closes while its channels are busy (an ops client closed mid-read, a process shutting
 * down): whatever was in flight settles, and nothing keeps the process alive. amqplib's `channel.close()`
 * never settles when the connection closes before the channel's close-ok; a read waited for a consume-ok
 * that could no longer come, re-arming its timer for ever: the dashboard's browser test passed its tests
 * and then did not exit, twice in CI.
 */
describe('a connection closed while its channels are busy', () => {
  after(cleanup);

  it("closeChannel resolves when the connection closes before the channel's close-ok", async () => {
    for (let i = 0; i < 10; i++) {
      const connection = await rawConnection();
      connection.on('error', () => undefined);
      const channel = await connection.createChannel();
      const closed = closeChannel(channel);
      const connectionClosed = connection.close().catch(() => undefined);
      assert.equal(await settlesWithin(closed, 3000), 'settled', `round ${i}`);
      await connectionClosed;
    }
    // a channel closed already resolves too
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    await channel.close();
    assert.equal(await settlesWithin(closeChannel(channel), 1000), 'settled');
    await connection.close();
  });

  it('a stream read whose connection closes mid-read fails with a typed ConnectionError', async () => {
    const stream = `${testNamespace('close-read')}.stream`;
    const connection = await rawConnection();
    connection.on('error', () => undefined);
    const setup = await connection.createChannel();
    await setup.assertQueue(stream, { durable: true, arguments: { 'x-queue-type': 'stream' } });
    // an empty stream read from its first record: the read waits for records until its connection closes
    const read = readStream(
      () => connection.createChannel(),
      stream,
      'first',
      {
        max: 1000,
        idleMs: 60_000,
        prefetch: 10,
      },
      () => true,
    );
    const outcome = read.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await sleep(300);
    const other = await rawConnection();
    await connection.close().catch(() => undefined);
    const error = await Promise.race([outcome, sleep(5000).then(() => 'hung')]);
    assert.ok(error instanceof ConnectionError, `the read ended with ${String(error)}`);
    assert.equal(error.code, 'CONNECTION_LOST');
    const cleanupChannel = await other.createChannel();
    await cleanupChannel.deleteQueue(stream);
    await other.close();
  });

  it('ops.close() during searches, lookups and queue reads: every call settles', async () => {
    const namespace = testNamespace('close-race');
    const topology = defineTopology({ queues: { q: {} } });
    // declares the plan (and deletes it in cleanup)
    await testWarren({ namespace, topology });
    for (let i = 0; i < 10; i++) {
      const ops = createOps({ url: BROKER_URL, namespace, topology });
      await ops.queues();
      // each call's outcome is watched from the start: a rejection before the close is an answer too
      const outcomes = Promise.all(
        [ops.dead.search({ jobId: 'x' }), ops.job('nope'), ops.dead.tail(5), ops.queues()].map((c) =>
          settlesWithin(c, 5000),
        ),
      );
      await sleep(i % 10);
      await ops.close();
      assert.deepEqual(
        await outcomes,
        ['settled', 'settled', 'settled', 'settled'],
        `round ${i} (closed after ${i % 10} ms)`,
      );
    }
  });
});
