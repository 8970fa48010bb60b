import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createSilentLogger } from '../../src/core';
import { ConnectionManager, resolveConnectionOptions } from '../../src/connection';
import { BROKER_URL } from '../support/test-broker';

/**
 * Node keeps what `setNoDelay` last set on a socket under a symbol described `kSetNoDelay`; there is
 * no public getter (nor getsockopt). amqplib 2.3 calls `setNoDelay(!!socketOptions.noDelay)`.
 */
function noDelayOf(socket: Socket): unknown {
  const key = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'kSetNoDelay');
  assert.ok(key, "this Node version keeps the socket's noDelay under kSetNoDelay");
  return (socket as unknown as Record<symbol, unknown>)[key];
}

describe("warren's AMQP connection", () => {
  const manager = new ConnectionManager(
    resolveConnectionOptions({ url: BROKER_URL, connectionName: 'warren-test no-delay' }),
    createSilentLogger(),
  );
  before(() => manager.start());
  after(() => manager.close());

  it("turns Nagle's algorithm off on its socket (noDelay)", async () => {
    const socket = (manager.current as unknown as { connection: { stream: Socket } }).connection.stream;
    assert.equal(noDelayOf(socket), true);
  });

  it('sends what its channels queued in one event-loop turn in one socket write (the mux round corked)', async () => {
    const socket = (manager.current as unknown as { connection: { stream: Socket } }).connection.stream;
    const channel = await manager.current!.createChannel();
    const queue = (await channel.assertQueue('', { exclusive: true })).queue;
    const writes: number[] = [];
    const spied = socket as unknown as {
      _write: (...args: unknown[]) => unknown;
      _writev: (chunks: unknown[], ...rest: unknown[]) => unknown;
    };
    const write = spied._write;
    const writev = spied._writev;
    spied._write = function (...args: unknown[]) {
      writes.push(1);
      return write.apply(this, args);
    };
    spied._writev = function (chunks: unknown[], ...rest: unknown[]) {
      writes.push(chunks.length);
      return writev.call(this, chunks, ...rest);
    };
    try {
      for (let i = 0; i < 50; i++) channel.sendToQueue(queue, Buffer.from(`m${i}`));
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      spied._write = write;
      spied._writev = writev;
    }
    // 50 publishes: 50 frames at least; without the cork each is a socket write (and a syscall) of its own
    assert.ok(writes.reduce((a, b) => a + b, 0) >= 50, `frames written: ${JSON.stringify(writes)}`);
    assert.ok(
      writes.length <= 3,
      `socket writes for 50 publishes: ${writes.length} (${JSON.stringify(writes)})`,
    );
    await channel.close();
  });
});
