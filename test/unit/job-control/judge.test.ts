import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { judge, parseControlRecord, placeRecord } from '../../../src/job-control';

describe('judging a delayed job that came due', () => {
  const now = 10_000;

  it('runs a job without a record, drops a cancelled one, re-delays one rescheduled later', () => {
    assert.equal(judge(undefined, undefined, now), 'run');
    assert.equal(judge({ j: 'a', a: 'cancel', t: 1 }, undefined, now), 'drop');
    assert.equal(judge({ j: 'a', a: 'reschedule', t: 1, u: now + 500 }, undefined, now), 500);
    assert.equal(judge({ j: 'a', a: 'reschedule', t: 1, u: now }, undefined, now), 'run');
  });

  it('runs only the copy a promote or reschedule names, and a copy newer than the latest record', () => {
    const promoted = { j: 'a', a: 'promote', t: 5, c: '5:x' } as const;
    assert.equal(judge(promoted, undefined, now), 'drop');
    assert.equal(judge(promoted, '5:x', now), 'run');
    assert.equal(judge(promoted, '4:old', now), 'drop');
    assert.equal(judge(promoted, '6:newer', now), 'run');
    assert.equal(judge(undefined, '6:newer', now), 'run');
    assert.equal(judge({ j: 'a', a: 'cancel', t: 7 }, '5:x', now), 'drop');
  });

  it('runs one of two promotes that raced and landed on the stream in the other order than their times', () => {
    const second = { j: 'a', a: 'promote', t: 6, c: '6:second' } as const;
    const first = { j: 'a', a: 'promote', t: 5, c: '5:first' } as const;
    const latest = placeRecord(first, placeRecord(second, undefined));
    assert.equal(judge(latest, '5:first', now), 'run');
    assert.equal(judge(latest, '6:second', now), 'drop', 'its record was read and superseded');
    assert.equal(judge(latest, '7:newer', now), 'run', 'its record is on its way');
  });

  it('ignores records that are not job-control records', () => {
    assert.equal(parseControlRecord(Buffer.from('not json')), undefined);
    assert.equal(parseControlRecord(Buffer.from('{"j":"a","a":"delete","t":1}')), undefined);
    assert.equal(parseControlRecord(Buffer.from('{"j":"a","a":"cancel"}')), undefined);
    assert.deepEqual(parseControlRecord(Buffer.from('{"j":"a","a":"cancel","t":1}')), {
      j: 'a',
      a: 'cancel',
      t: 1,
    });
  });

  it('ignores a record dated in the future, whose entry would never be swept, and one out of bounds', () => {
    const now = 1_000_000_000_000;
    const rec = (r: object) => parseControlRecord(Buffer.from(JSON.stringify(r)), now);
    assert.equal(rec({ j: 'a', a: 'cancel', t: now + 400 * 86_400_000 }), undefined);
    assert.equal(rec({ j: 'a', a: 'reschedule', t: now, u: now + 800 * 86_400_000 }), undefined);
    assert.equal(rec({ j: 'x'.repeat(600), a: 'cancel', t: now }), undefined);
    assert.equal(rec({ j: 'a', a: 'stored', t: now, b: 1 }), undefined);
    assert.equal(rec({ j: '', a: 'cancel', t: now }), undefined);
    assert.equal(rec({ j: 'a', a: 'cancel', t: now })?.j, 'a');
  });
});
