import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError } from '../../../src';
import { resolveTopologyOptions } from '../../../src/topology';
import { resolveConnectionOptions } from '../../../src/connection';
import { resolveJobDefaults } from '../../../src/core';
import { resolvePublisherOptions } from '../../../src/publisher';
import { resolveWorkerOptions } from '../../../src/worker';

describe('option resolution', () => {
  it('fills library defaults and freezes the result', () => {
    const worker = resolveWorkerOptions();
    assert.equal(worker.shutdownGraceMs, 10_000);
    assert.ok(Object.isFrozen(worker));
    assert.deepEqual(resolveJobDefaults().attempts, 3);
  });

  it('names the path, the rule and the value of an invalid option', () => {
    assert.throws(
      () => resolvePublisherOptions({ timeoutMs: 0 }),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        error.message === 'publisher.timeoutMs must be an integer >= 1 (got 0)',
    );
    assert.throws(
      () => resolveTopologyOptions({ delay: { levels: 99 } }),
      /delay.levels must be an integer from 1 to 40 \(got 99\)/,
    );
    assert.throws(
      () => resolveJobDefaults({ backoff: { type: 'linear' } as never }),
      /jobDefaults.backoff.type must be 'fixed' or 'exponential'/,
    );
  });

  it('skips an exported but empty WARREN_URL or AMQP_URL for the next source of the broker URL', () => {
    assert.deepEqual(resolveConnectionOptions({}, { WARREN_URL: '', AMQP_URL: 'amqp://x' }).urls, [
      'amqp://x',
    ]);
    assert.deepEqual(resolveConnectionOptions({}, { WARREN_URL: ' ', AMQP_URL: '' }).urls, [
      'amqp://guest:guest@127.0.0.1:5672',
    ]);
  });

  it('takes the broker URL from the options, then WARREN_URL, then AMQP_URL, then localhost', () => {
    assert.deepEqual(resolveConnectionOptions({ url: 'amqp://a' }, {}).urls, ['amqp://a']);
    assert.deepEqual(resolveConnectionOptions({}, { WARREN_URL: 'amqp://w', AMQP_URL: 'amqp://x' }).urls, [
      'amqp://w',
    ]);
    assert.deepEqual(resolveConnectionOptions({}, { AMQP_URL: 'amqp://x,amqp://y' }).urls, [
      'amqp://x',
      'amqp://y',
    ]);
    assert.deepEqual(resolveConnectionOptions({}, {}).urls, ['amqp://guest:guest@127.0.0.1:5672']);
    assert.throws(
      () => resolveConnectionOptions({ url: 'http://nope' }, {}),
      /connection.url\[0\] must start with amqp/,
    );
  });

  it('lets per-job settings override warren defaults which override library defaults', () => {
    const warrenLevel = resolveJobDefaults({ attempts: 7 });
    assert.equal(warrenLevel.attempts, 7);
    assert.equal(warrenLevel.timeoutMs, 15 * 60_000);
  });
});
