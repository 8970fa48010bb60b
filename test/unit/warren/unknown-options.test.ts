import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError, createWarren, RetryLaterError, type WarrenOptions } from '../../../src';
import { resolveConnectionOptions } from '../../../src/connection';

/** Each is refused before anything connects (no broker is needed). */
const UNKNOWN: [string, object][] = [
  ['options.tls', { tls: {} }],
  ['connection.tls', { connection: { tls: { ca: 'x' } } }],
  ['connection.reconnect.delayMs', { connection: { reconnect: { delayMs: 1 } } }],
  ['connection.socket.cafile', { connection: { socket: { cafile: '/tmp/ca.pem' } } }],
  ['publisher.maxBodySize', { publisher: { maxBodySize: 1 } }],
  ['worker.prefech', { worker: { prefech: 1 } }],
  ['jobDefaults.retries', { jobDefaults: { retries: 1 } }],
  ['delay.unit', { delay: { unit: 1 } }],
  ['queues.type', { queues: { type: 'classic' } }],
  ['scheduler.timezone', { scheduler: { timezone: 'UTC' } }],
  ['breakerDefaults.timeout', { breakerDefaults: { timeout: 1 } }],
];

describe('unknown option keys', () => {
  for (const [path, options] of UNKNOWN) {
    it(`refuses ${path} at createWarren, naming its path`, async () => {
      await assert.rejects(
        createWarren({ url: 'amqp://127.0.0.1:1', ...options } as WarrenOptions),
        (error: unknown) =>
          error instanceof ConfigurationError && error.message.startsWith(`${path} is not an option`),
      );
    });
  }

  it('turns Nagle off by default and passes socket options through, overridable', () => {
    assert.deepEqual(resolveConnectionOptions({}, {}).socket, { noDelay: true });
    const ca = Buffer.from('ca');
    assert.deepEqual(resolveConnectionOptions({ socket: { noDelay: false, ca } }, {}).socket, {
      noDelay: false,
      ca,
    });
    assert.equal(resolveConnectionOptions({}, {}).auth, 'plain');
  });

  it('refuses an auth mechanism it does not know', async () => {
    await assert.rejects(
      createWarren({ url: 'amqp://127.0.0.1:1', connection: { auth: 'kerberos' as 'plain' } }),
      /connection.auth must be one of 'plain', 'external'/,
    );
  });
});

describe('numbers a handler or a declaration may not use', () => {
  it('refuses a RetryLaterError whose delay is NaN, negative or infinite', () => {
    for (const delay of [Number.NaN, -1, Number.POSITIVE_INFINITY])
      assert.throws(() => new RetryLaterError(delay), ConfigurationError);
    assert.equal(new RetryLaterError(0).delayMs, 0);
  });
});
