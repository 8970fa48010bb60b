import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitOpenError, RetryLaterError, UnrecoverableError } from '../../../src';
import { backoffDelay, decideFailure } from '../../../src/retry';

const base = {
  maxAttempts: 3,
  backoff: { type: 'exponential', delayMs: 1000, maxDelayMs: 5000, jitter: 0 } as const,
  postponeDelayMs: 5000,
  random: () => 0.5,
};

describe('decideFailure', () => {
  it('retries with exponential backoff while attempts remain', () => {
    assert.deepEqual(decideFailure({ ...base, attempt: 1, error: new Error('x') }), {
      action: 'retry',
      delayMs: 1000,
      nextAttempt: 2,
    });
    assert.deepEqual(decideFailure({ ...base, attempt: 2, error: new Error('x') }), {
      action: 'retry',
      delayMs: 2000,
      nextAttempt: 3,
    });
  });

  it('dead-letters after the last attempt (maxAttempts counts the first try)', () => {
    assert.deepEqual(decideFailure({ ...base, attempt: 3, error: new Error('x') }), {
      action: 'dead-letter',
      reason: 'attempts-exhausted',
    });
  });

  it('dead-letters an unrecoverable error at once', () => {
    assert.deepEqual(decideFailure({ ...base, attempt: 1, error: new UnrecoverableError('bad card') }), {
      action: 'dead-letter',
      reason: 'unrecoverable',
    });
  });

  it("honours the handler's own retry delay", () => {
    assert.deepEqual(decideFailure({ ...base, attempt: 1, error: new RetryLaterError(42_000) }), {
      action: 'retry',
      delayMs: 42_000,
      nextAttempt: 2,
    });
  });

  it('postpones without spending an attempt while a circuit breaker is open', () => {
    assert.deepEqual(decideFailure({ ...base, attempt: 3, error: new CircuitOpenError('mailer') }), {
      action: 'postpone',
      delayMs: 5000,
    });
  });
});

describe('backoffDelay', () => {
  it('caps exponential growth and keeps jitter below the nominal delay', () => {
    const backoff = { type: 'exponential', delayMs: 1000, maxDelayMs: 5000, jitter: 0.5 } as const;
    assert.equal(
      backoffDelay(backoff, 10, null, () => 1),
      5000,
    );
    assert.equal(
      backoffDelay(backoff, 10, null, () => 0),
      2500,
    );
    assert.equal(
      backoffDelay(backoff, 1, null, () => 0.5),
      750,
    );
  });

  it('supports fixed and custom backoff', () => {
    assert.equal(backoffDelay({ type: 'fixed', delayMs: 300 }, 4, null), 300);
    assert.equal(
      backoffDelay((attempt) => attempt * 10, 4, null),
      40,
    );
    assert.equal(
      backoffDelay(() => Number.NaN, 4, null),
      0,
    );
  });
});
