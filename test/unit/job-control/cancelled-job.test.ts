import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dueTimeOf, knownOfJob } from '../../../src/job-control/cancelled-job';
import type { ControlRecord } from '../../../src/job-control';
import type { PlannedJob } from '../../../src/topology';

const stored: ControlRecord = {
  j: 'invoice-42',
  a: 'stored',
  t: 1_000,
  q: 'ns.billing',
  b: '',
  h: { 'warren-delayed': 90_000 },
  p: { type: 'invoice.send' },
};
const jobs = new Map([['invoice.send', { queue: 'billing', queueName: 'ns.billing' } as PlannedJob]]);

describe('what a cancel can tell of its job', () => {
  it('reads the due time, name and queue from a stored copy', () => {
    assert.deepEqual(knownOfJob(undefined, stored, jobs), {
      dueAt: new Date(90_000),
      name: 'invoice.send',
      queue: 'billing',
    });
  });

  it('prefers the latest reschedule or promote to the stored due time', () => {
    const moved: ControlRecord = { j: 'invoice-42', a: 'reschedule', t: 2_000, u: 50_000 };
    assert.equal(dueTimeOf(moved, stored), 50_000);
    const promoted: ControlRecord = { j: 'invoice-42', a: 'promote', t: 3_000, c: '3000:x' };
    assert.equal(dueTimeOf(promoted, stored), 3_000);
    const cancelled: ControlRecord = { j: 'invoice-42', a: 'cancel', t: 4_000 };
    assert.equal(dueTimeOf(cancelled, stored), 90_000);
  });

  it('knows nothing of a plain delayed job, and no queue that is not the planned one', () => {
    assert.deepEqual(knownOfJob(undefined, undefined, jobs), {});
    assert.ok(Number.isNaN(dueTimeOf(undefined, undefined)));
    assert.deepEqual(knownOfJob(undefined, { ...stored, q: 'elsewhere' }, jobs), {
      dueAt: new Date(90_000),
      name: 'invoice.send',
    });
  });
});
