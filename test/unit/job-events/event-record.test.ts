import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseEventRecord, parseInterestRecord } from '../../../src/job-events/event-record';
import { resolveEventsOptions, resolveSubscribeOptions } from '../../../src/job-events';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const completed = {
  v: 1,
  kind: 'completed',
  jobId: 'j1',
  name: 'report.build',
  queue: 'reports',
  attempt: 1,
  at: 1_700_000_000_000,
  process: 'p1',
  seq: { jobId: 3 },
  durationMs: 12,
  result: { done: 1 },
};

describe('live event records', () => {
  it('reads an event back with its sequence numbers', () => {
    const parsed = parseEventRecord(json(completed))!;
    assert.equal(parsed.event.kind, 'completed');
    assert.deepEqual(parsed.event.at, new Date(completed.at));
    assert.deepEqual(parsed.seq, { jobId: 3 });
    assert.deepEqual(parsed.event.kind === 'completed' && parsed.event.result, { done: 1 });
  });

  it('refuses what is out of shape: another version, an unknown kind, a missing or mistyped field', () => {
    for (const bad of [
      { ...completed, v: 2 },
      { ...completed, kind: 'exploded' },
      { ...completed, durationMs: 'soon' },
      { ...completed, seq: { jobId: -1 } },
      { ...completed, seq: null },
      { ...completed, at: Number.NaN },
      { ...completed, jobId: 'x'.repeat(10_001) },
      { ...completed, kind: 'failed' },
      [completed],
    ])
      assert.equal(parseEventRecord(json(bad)), undefined, JSON.stringify(bad).slice(0, 80));
    assert.equal(parseEventRecord(Buffer.from('{not json')), undefined);
  });

  it('reads an interest, a withdrawal and a hello; refuses a bad subscriber id, filter or lease', () => {
    const interest = {
      v: 1,
      op: 'interest',
      subscriber: '0123456789abcdef',
      filter: { name: 'a.b' },
      leaseMs: 30_000,
      t: 1,
    };
    const read = parseInterestRecord(json(interest));
    assert.deepEqual(read && 'filter' in read ? read.filter : undefined, { name: 'a.b' });
    assert.equal(parseInterestRecord(json({ ...interest, op: 'withdraw' }))?.op, 'withdraw');
    assert.equal(parseInterestRecord(json({ v: 1, op: 'hello', process: 'p', t: 1 }))?.op, 'hello');
    for (const bad of [
      { ...interest, subscriber: 'me' },
      { ...interest, filter: { name: 'a', queue: 'b' } },
      { ...interest, filter: { routingKey: '#' } },
      { ...interest, filter: { jobId: '' } },
      { ...interest, leaseMs: 10 },
      { ...interest, op: 'subscribe' },
    ])
      assert.equal(parseInterestRecord(json(bad)), undefined, JSON.stringify(bad));
  });
});

describe('live event options', () => {
  it('default to sending, 16 KiB values and queues of 1000, and name the path of a bad value', () => {
    assert.deepEqual({ ...resolveEventsOptions() }, { publish: true, maxValueBytes: 16_384 });
    assert.equal(resolveSubscribeOptions().maxLength, 1000);
    assert.throws(() => resolveSubscribeOptions({ maxLength: 0 }), /subscribe\.maxLength must be an integer/);
    assert.throws(() => resolveEventsOptions({ maxValueBytes: -1 }), /events\.maxValueBytes/);
  });
});
