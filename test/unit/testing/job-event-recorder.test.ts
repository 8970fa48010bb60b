import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { WarrenEvents } from '../../../src';
import { recordJobEvents } from '../../../src/testing';

const base = { queue: 'email', attempt: 1 };

describe('JobEventRecorder', () => {
  it('answers a wait with an event that happened before the wait began', async () => {
    const warren = new EventEmitter<WarrenEvents>();
    const jobs = recordJobEvents(warren);
    warren.emit('completed', { ...base, jobId: 'j1', name: 'email.welcome', durationMs: 3, result: 'ok' });
    const event = await jobs.waitForCompleted('email.welcome', { jobId: 'j1', timeoutMs: 0 });
    assert.equal(event.result, 'ok');
    assert.equal(event.type, 'completed');
  });

  it('answers a wait with an event that happens later, matching name, job id and condition', async () => {
    const warren = new EventEmitter<WarrenEvents>();
    const jobs = recordJobEvents(warren);
    const waiting = jobs.waitForFailed('email.welcome', {
      jobId: 'j2',
      where: (event) => event.attempt === 2,
    });
    warren.emit('failed', {
      ...base,
      jobId: 'j1',
      name: 'email.welcome',
      error: new Error('x'),
      willRetry: true,
    });
    warren.emit('failed', {
      ...base,
      jobId: 'j2',
      name: 'email.other',
      error: new Error('x'),
      willRetry: true,
    });
    warren.emit('failed', {
      ...base,
      jobId: 'j2',
      name: 'email.welcome',
      error: new Error('first'),
      willRetry: true,
    });
    warren.emit('failed', {
      ...base,
      attempt: 2,
      jobId: 'j2',
      name: 'email.welcome',
      error: new Error('second'),
      willRetry: false,
    });
    assert.equal(((await waiting).error as Error).message, 'second');
  });

  it('uses each event for one wait only', async () => {
    const warren = new EventEmitter<WarrenEvents>();
    const jobs = recordJobEvents(warren);
    warren.emit('completed', {
      ...base,
      jobId: 'a',
      name: 'email.welcome',
      durationMs: 1,
      result: undefined,
    });
    assert.equal((await jobs.waitForCompleted('email.welcome')).jobId, 'a');
    const second = jobs.waitForCompleted('email.welcome', { timeoutMs: 1_000 });
    warren.emit('completed', {
      ...base,
      jobId: 'b',
      name: 'email.welcome',
      durationMs: 1,
      result: undefined,
    });
    assert.equal((await second).jobId, 'b');
  });

  it('rejects at the deadline, listing what happened to the job instead', async () => {
    const warren = new EventEmitter<WarrenEvents>();
    const jobs = recordJobEvents(warren, { timeoutMs: 50 });
    warren.emit('failed', {
      ...base,
      jobId: 'j3',
      name: 'email.welcome',
      error: new TypeError('bad address'),
      willRetry: true,
    });
    warren.emit('retried', {
      ...base,
      jobId: 'j3',
      name: 'email.welcome',
      error: new TypeError('bad address'),
      delayMs: 1000,
      nextAttempt: 2,
    });
    await assert.rejects(
      jobs.waitForCompleted('email.welcome', { jobId: 'j3' }),
      new Error(
        "timed out after 50 ms waiting for job 'email.welcome' (jobId 'j3') to complete; seen instead: failed (j3 attempt 1: TypeError: bad address); retried (j3 attempt 1, next attempt in 1000 ms)",
      ),
    );
  });

  it('stops listening on stop()', () => {
    const warren = new EventEmitter<WarrenEvents>();
    const jobs = recordJobEvents(warren);
    assert.equal(warren.listenerCount('completed'), 1);
    jobs.stop();
    assert.equal(warren.listenerCount('completed'), 0);
    warren.emit('completed', {
      ...base,
      jobId: 'late',
      name: 'email.welcome',
      durationMs: 1,
      result: undefined,
    });
    assert.equal(jobs.events.length, 0);
  });
});
