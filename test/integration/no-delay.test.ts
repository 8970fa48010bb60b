import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, describe, it } from 'node:test';
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
  after(() => manager.close());

  it("turns Nagle's algorithm off on its socket (noDelay)", async () => {
    await manager.start();
    const socket = (manager.current as unknown as { connection: { stream: Socket } }).connection.stream;
    assert.equal(noDelayOf(socket), true);
  });
});
