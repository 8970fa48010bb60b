import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError, type JobDefinition } from '../../../src';
import { resolveJobLimiters, resolveLimiterOptions } from '../../../src/coordination';

const job = (name: string, limiter?: JobDefinition['limiter']): JobDefinition => ({
  name,
  queue: 'work',
  limiter,
});

describe('rate-limit options', () => {
  it('bounds rate-limit permits per window', () => {
    assert.throws(
      () => resolveLimiterOptions('@Job(a).limiter', 'a', { max: 1_000_000, durationMs: 1000 }),
      /@Job\(a\).limiter.max must be an integer from 1 to 10000/,
    );
    assert.equal(resolveLimiterOptions('p', 'a', { max: 10_000, durationMs: 1000 }).max, 10_000);
  });

  it('gives jobs that share a key one limiter, keyed by job name otherwise', () => {
    const { byKey, ofJob } = resolveJobLimiters([
      job('api.read', { key: 'api', max: 5, durationMs: 1000 }),
      job('api.write', { key: 'api', max: 5, durationMs: 1000, waitMs: 10 }),
      job('mail.send', { max: 2, durationMs: 500 }),
      job('plain'),
    ]);
    assert.deepEqual([...byKey.keys()], ['api', 'mail.send']);
    assert.equal(ofJob.get('api.read'), byKey.get('api'));
    assert.equal(ofJob.get('api.write'), byKey.get('api'));
    assert.equal(ofJob.get('mail.send')?.waitMs, 1000);
    assert.equal(ofJob.has('plain'), false);
  });

  it('refuses jobs that share a key but not its limit, naming both', () => {
    assert.throws(
      () =>
        resolveJobLimiters([
          job('a', { key: 'k', max: 5, durationMs: 1000 }),
          job('b', { key: 'k', max: 6, durationMs: 1000 }),
        ]),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        error.message.startsWith("@Job('b').limiter shares rate-limit key 'k' with @Job('a').limiter"),
    );
  });
});
