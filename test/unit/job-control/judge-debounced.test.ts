import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  inBurst,
  judgeDebounced,
  parseControlRecord,
  placeRecord,
  type ControlRecord,
} from '../../../src/job-control';

describe('judging a debounced copy that came due', () => {
  const latest: ControlRecord = {
    j: 'debounce:doc.reindex:42',
    a: 'debounce',
    t: 5_000,
    u: 6_000,
    c: '5000:z',
    f: 1_000,
  };

  it('runs the latest copy of its key and drops the ones it superseded', () => {
    assert.equal(judgeDebounced(latest, '5000:z'), 'run');
    assert.equal(judgeDebounced(latest, '4000:y'), 'drop');
    assert.equal(
      judgeDebounced(latest, '5000:y'),
      'drop',
      'a copy of the same millisecond whose record came first',
    );
  });

  it('runs the last copy of the burst before, a copy newer than every record, and any copy without a record', () => {
    assert.equal(judgeDebounced({ ...latest, l: '3000:x' }, '3000:x'), 'run');
    assert.equal(judgeDebounced(latest, '5001:w'), 'run', 'its record is on its way');
    assert.equal(judgeDebounced(undefined, '1:v'), 'run', 'a lost state runs, never loses the job');
  });

  it('drops a copy published before a cancel of its debounce id, and a delivery without a copy id', () => {
    assert.equal(judgeDebounced({ j: latest.j, a: 'cancel', t: 5_000 }, '4000:y'), 'drop');
    assert.equal(judgeDebounced({ j: latest.j, a: 'cancel', t: 5_000 }, '6000:y'), 'run');
    assert.equal(judgeDebounced(latest, undefined), 'drop');
  });

  it('reads a debounce record only with its copy, due time and burst start', () => {
    const body = (r: object) => Buffer.from(JSON.stringify(r));
    assert.deepEqual(parseControlRecord(body(latest), 10_000), latest);
    assert.equal(parseControlRecord(body({ ...latest, c: undefined }), 10_000), undefined);
    assert.equal(parseControlRecord(body({ ...latest, f: undefined }), 10_000), undefined);
    assert.equal(
      parseControlRecord(body({ ...latest, f: 9_000 }), 10_000),
      undefined,
      'a burst that began after its record',
    );
    assert.equal(parseControlRecord(body({ ...latest, l: 7 }), 10_000), undefined);
  });

  it('places a record in its burst by the stream’s order, not by its publisher’s lagging view', () => {
    const id = latest.j;
    const first: ControlRecord = { j: id, a: 'debounce', t: 1_000, u: 4_000, c: '1000:a', f: 1_000 };
    // published at 2,000 while the copy of 1,000 was not due: the same burst, whatever the publisher saw
    const stale: ControlRecord = {
      j: id,
      a: 'debounce',
      t: 2_000,
      u: 5_000,
      c: '2000:b',
      f: 2_000,
      l: '0:old',
    };
    assert.deepEqual(inBurst(stale, first), {
      j: id,
      a: 'debounce',
      t: 2_000,
      u: 5_000,
      c: '2000:b',
      f: 1_000,
    });
    // the older copy it named as the last of a burst is then dropped when it comes due
    assert.equal(judgeDebounced(inBurst(stale, first), '0:old'), 'drop');
    assert.equal(judgeDebounced(stale, '0:old'), 'run', 'as the publisher wrote it, it would have run');
    // published at 6,000, after the copy of 2,000 came due (5,000): a new burst, whose `l` is that copy
    const later: ControlRecord = { j: id, a: 'debounce', t: 6_000, u: 9_000, c: '6000:c', f: 6_000 };
    const placed = inBurst(later, inBurst(stale, first));
    assert.deepEqual([placed.f, placed.l], [6_000, '2000:b']);
    assert.equal(judgeDebounced(placed, '2000:b'), 'run');
    // within a burst the last burst's copy is carried on; after a cancel, or with nothing before, none
    const next = inBurst({ ...later, t: 7_000, c: '7000:d', u: 10_000, f: 7_000 }, placed);
    assert.deepEqual([next.f, next.l], [6_000, '2000:b']);
    assert.equal(inBurst(later, { j: id, a: 'cancel', t: 5_500 }).l, undefined);
    assert.deepEqual(inBurst(later, undefined), later);
  });

  it('runs one copy when two publishes race and land on the stream in the other order than their times', () => {
    const id = latest.j;
    // P took 1,000 and Q 1,001; Q's record was appended first, so P's is the latest
    const q: ControlRecord = { j: id, a: 'debounce', t: 1_001, u: 4_001, c: '1001:q', f: 1_001 };
    const p: ControlRecord = { j: id, a: 'debounce', t: 1_000, u: 4_000, c: '1000:p', f: 1_000 };
    const last = placeRecord(p, placeRecord(q, undefined));
    assert.equal(judgeDebounced(last, '1000:p'), 'run', 'the latest record’s copy');
    assert.equal(judgeDebounced(last, '1001:q'), 'drop', 'its record was read: superseded, though newer');
    assert.equal(judgeDebounced(last, '1002:r'), 'run', 'a copy newer than every record read');
    assert.equal(last.m, 1_001);
    assert.equal(placeRecord({ ...q, m: 9_999 }, undefined).m, undefined, 'a publisher’s `m` is ignored');
  });
});
