import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { judgeDebounced, parseControlRecord, type ControlRecord } from '../../../src/job-control';

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
});
