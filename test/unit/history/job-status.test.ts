import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jobStatus, resolveHistoryOptions, type JobEvent } from '../../../src/history';

function event(kind: JobEvent['kind'], at: number, extra: Partial<JobEvent> = {}): JobEvent {
  return { kind, at: new Date(at), name: 'n', queue: 'q', process: 'h:1', processId: 'p', ...extra };
}

describe('job status from its history', () => {
  it('says unknown without events, waiting or delayed after a publish', () => {
    assert.equal(jobStatus('j', [], 0).state, 'unknown');
    assert.equal(jobStatus('j', [event('published', 1)], 10).state, 'waiting');
    assert.equal(jobStatus('j', [event('published', 1, { runAt: new Date(20) })], 10).state, 'delayed');
    assert.equal(jobStatus('j', [event('published', 1, { runAt: new Date(5) })], 10).state, 'waiting');
  });

  it('follows the last event: running, retrying, completed, dead', () => {
    const trail = [event('published', 1), event('started', 2)];
    assert.equal(jobStatus('j', trail, 3).state, 'running');
    assert.equal(jobStatus('j', [...trail, event('retrying', 3)], 4).state, 'retrying');
    assert.equal(jobStatus('j', [...trail, event('completed', 3)], 4).state, 'completed');
    const dead = jobStatus('j', [...trail, event('dead', 3, { reason: 'unrecoverable' })], 4);
    assert.deepEqual([dead.state, dead.last?.reason], ['dead', 'unrecoverable']);
  });

  it('resolves history options with defaults and checks them', () => {
    const o = resolveHistoryOptions();
    assert.deepEqual([o.maxAgeMs, o.flushMs, o.maxBatch], [24 * 3600_000, 200, 1000]);
    assert.throws(() => resolveHistoryOptions({ flushMs: 0 }), /history.flushMs must be an integer from 1/);
  });
});
