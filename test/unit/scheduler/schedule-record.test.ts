import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyScheduleRecord,
  decodeScheduleRecord,
  encodeScheduleRecord,
  type RegistryEntry,
  type ScheduleRecord,
} from '../../../src/scheduler';

const upsert: ScheduleRecord = { v: 1, id: 'a', action: 'upsert', at: 1, job: 'x.y', pattern: '* * * * *' };

function replay(records: ScheduleRecord[]): Map<string, RegistryEntry> {
  const state = new Map<string, RegistryEntry>();
  for (const record of records) applyScheduleRecord(state, record);
  return state;
}

describe('schedule registry records', () => {
  it('round-trips a record and refuses what warren did not write', () => {
    assert.deepEqual(decodeScheduleRecord(encodeScheduleRecord(upsert)), upsert);
    for (const body of [
      'nope',
      '42',
      '{"v":2,"id":"a","action":"pause"}',
      '{"v":1,"action":"pause"}',
      '{"v":1,"id":"a","action":"explode"}',
      '{"v":1,"id":"a","action":"upsert","job":"x.y"}',
      '{"v":1,"id":"a","action":"upsert","job":"x.y","pattern":"* * * * *","tz":7}',
      '{"v":1,"id":"a","action":"upsert","job":"x.y","pattern":"* * * * *","missedTicks":"all"}',
      '{"v":1,"action":"sync"}',
    ])
      assert.equal(typeof decodeScheduleRecord(Buffer.from(body)), 'string', body);
  });

  it('keeps the last word per id: upsert activates, pause and resume keep the definition, remove forgets', () => {
    const paused = replay([upsert, { v: 1, id: 'a', action: 'pause', at: 2 }]);
    assert.deepEqual(
      [paused.get('a')?.paused, paused.get('a')?.definition?.job, paused.get('a')?.definition?.pattern],
      [true, 'x.y', '* * * * *'],
    );
    const resumed = replay([
      upsert,
      { v: 1, id: 'a', action: 'pause', at: 2 },
      { v: 1, id: 'a', action: 'resume', at: 3 },
    ]);
    assert.equal(resumed.get('a')?.paused, false);
    assert.equal(resumed.get('a')?.definition?.pattern, '* * * * *');
    const replaced = replay([
      upsert,
      { v: 1, id: 'a', action: 'pause', at: 2 },
      { ...upsert, pattern: '0 * * * *' },
    ]);
    assert.deepEqual(
      [replaced.get('a')?.paused, replaced.get('a')?.definition?.pattern],
      [false, '0 * * * *'],
    );
    assert.equal(replay([upsert, { v: 1, id: 'a', action: 'remove', at: 2 }]).has('a'), false);
  });

  it('pauses an id it has no definition of (a schedule declared in code), and forgets it on resume', () => {
    const state = replay([{ v: 1, id: 'coded', action: 'pause', at: 1 }]);
    assert.deepEqual(state.get('coded'), { definition: undefined, paused: true });
    applyScheduleRecord(state, { v: 1, id: 'coded', action: 'resume', at: 2 });
    assert.equal(state.has('coded'), false);
  });
});
