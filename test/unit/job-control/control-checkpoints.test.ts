import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSilentLogger } from '../../../src/core';
import {
  controlState,
  restoreControlState,
  storedCopyRef,
} from '../../../src/job-control/control-checkpoints';
import type { ControlRecord } from '../../../src/job-control/control-record';
import { RecordTrust } from '../../../src/records';

const reader = () => new RecordTrust('ns', undefined, createSilentLogger()).reader('job-control');
const checkpoint = (c: unknown[]) => {
  const guard = reader().guardSnapshot();
  return { upTo: 100, at: Date.now(), guard, state: { d: [], c } };
};

describe('job-control checkpoints: the stored copies', () => {
  const stored: ControlRecord = {
    j: 'job-1',
    a: 'stored',
    t: 1000,
    q: 'ns.reports',
    b: '',
    h: { 'warren-delayed': 5000 },
    p: { type: 'report.build' },
  };

  it('keep what the delayed listing needs (due time, name, queue) through a checkpoint', () => {
    const ref = storedCopyRef(stored, 7);
    assert.deepEqual(ref, { offset: 7, t: 1000, due: 5000, name: 'report.build', queue: 'ns.reports' });
    const state = controlState(new Map(), new Map([['job-1', ref]])) as { c: unknown[] };
    const restored = restoreControlState({ ...checkpoint(state.c) }, reader());
    assert.deepEqual(restored?.copies, [['job-1', ref]]);
  });

  it('take a checkpoint written before the listing ([job id, offset, t]): the copy is there, its due time unknown', () => {
    const restored = restoreControlState(checkpoint([['job-1', 7, 1000]]), reader());
    assert.deepEqual(restored?.copies, [['job-1', { offset: 7, t: 1000 }]]);
  });

  it('refuse a checkpoint whose copy has a due time or a name of the wrong kind', () => {
    assert.equal(
      restoreControlState(checkpoint([['job-1', 7, 1000, 'soon', null, null]]), reader()),
      undefined,
    );
    assert.equal(restoreControlState(checkpoint([['job-1', 7, 1000, 5000, 42, null]]), reader()), undefined);
    assert.equal(
      restoreControlState(checkpoint([['job-1', 7, 1000, 5000, 'x'.repeat(256), null]]), reader()),
      undefined,
    );
    assert.equal(restoreControlState(checkpoint([['job-1', 7, 1000, 5000]]), reader()), undefined);
  });
});
