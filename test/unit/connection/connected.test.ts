import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConnectionManager, resolveConnectionOptions } from '../../../src/connection';
import { ConnectionError, createSilentLogger } from '../../../src/core';

/** A manager never started: `connected` has nothing to wait for but its timeout or a close. */
function idleManager(): ConnectionManager {
  return new ConnectionManager(resolveConnectionOptions({ url: 'amqp://127.0.0.1:1' }), createSilentLogger());
}

describe('ConnectionManager.connected', () => {
  it('fails with CONNECTION_LOST when no connection comes within the timeout', async () => {
    const manager = idleManager();
    const started = Date.now();
    await assert.rejects(manager.connected(60), (error: unknown) => {
      assert.ok(error instanceof ConnectionError);
      assert.equal(error.code, 'CONNECTION_LOST');
      assert.match(error.message, /within 60 ms/);
      return true;
    });
    assert.ok(Date.now() - started >= 55, 'it waited for the timeout');
  });

  it('fails at once when the manager closes while it waits, and refuses to wait on a closed manager', async () => {
    const manager = idleManager();
    const waiting = manager.connected(10_000);
    const started = Date.now();
    await manager.close();
    await assert.rejects(waiting, /the connection is closed/);
    assert.ok(Date.now() - started < 1_000, 'the close ended the wait');
    await assert.rejects(manager.connected(10_000), /the connection is closed/);
  });
});
