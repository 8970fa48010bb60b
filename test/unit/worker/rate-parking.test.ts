import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KeyLimits } from '../../../src/worker/key-limits';
import { type ParkedDecision, RateParking } from '../../../src/worker/rate-parking';

const p1 = { partition: 1 };
const p2 = { partition: 2 };
const entry = (key: string, seq: number, owned: object = p1) => ({ key, seq, jobName: 'api.sync', owned });
type Entry = ReturnType<typeof entry>;

describe('rate parking: a saturated key backlog waiting in its owner for the key slots', () => {
  it('parks what its key can start within the horizon, up to the bound per partition', () => {
    const parking = new RateParking<Entry>(2, 30_000);
    assert.equal(parking.park(entry('a', 1), 1_000, 1_000, 0), true);
    assert.equal(parking.park(entry('a', 2), 30_001, 1_000, 0), false, 'a slot past the horizon: re-delayed');
    assert.equal(parking.park(entry('b', 1), 2_000, 2_000, 0), true);
    assert.equal(parking.park(entry('c', 1), 500, 500, 0), false, 'partition 1 holds its bound of 2');
    assert.equal(parking.park(entry('c', 1, p2), 500, 500, 0), true, 'another partition has room of its own');
    assert.equal(parking.size, 3);
    assert.equal(parking.ofKey('api.sync', 'a'), 1);
    assert.equal(parking.ofKey('api.other', 'a'), 0, 'per job type');
    assert.equal(parking.nextDueAt, 500);
  });

  it('starts a due line in arrival order until its key waits again, and leaves the lines not due', () => {
    const parking = new RateParking<Entry>(10, 30_000);
    for (let seq = 1; seq <= 3; seq++) parking.park(entry('a', seq), 1_000, 1_000, 0);
    parking.park(entry('b', 1), 5_000, 5_000, 0);
    const decided: string[] = [];
    parking.release(1_000, (e): ParkedDecision => {
      decided.push(`${e.key}${e.seq}`);
      return e.seq < 3 ? 'taken' : { until: 2_000 };
    });
    assert.deepEqual(decided, ['a1', 'a2', 'a3']);
    assert.equal(parking.size, 2);
    assert.equal(parking.nextDueAt, 2_000);
    decided.length = 0;
    parking.release(1_999, () => assert.fail('nothing is due before 2,000'));
    parking.release(6_000, (e) => {
      decided.push(`${e.key}${e.seq}`);
      return 'taken';
    });
    assert.deepEqual(decided, ['a3', 'b1']);
    assert.equal(parking.size, 0);
    assert.equal(parking.nextDueAt, Number.POSITIVE_INFINITY);
  });

  it('stops at full, and what was due stays due for the next call', () => {
    const parking = new RateParking<Entry>(10, 30_000);
    parking.park(entry('a', 1), 1_000, 1_000, 0);
    parking.park(entry('b', 1), 1_000, 1_000, 0);
    let calls = 0;
    parking.release(1_000, () => {
      calls += 1;
      return 'full';
    });
    assert.equal(calls, 1, 'nothing more is decided once the process is full');
    assert.equal(parking.size, 2);
    assert.ok(parking.nextDueAt <= 1_000);
    parking.release(1_001, () => 'taken');
    assert.equal(parking.size, 0);
  });

  it('lets go of what is gone, freeing its partition room, and decides everything again after a change', () => {
    const parking = new RateParking<Entry>(2, 30_000);
    parking.park(entry('a', 1), 1_000, 1_000, 0);
    parking.park(entry('a', 2, p2), 1_000, 9_000, 0);
    parking.park(entry('b', 1), 1_000, 8_000, 0);
    const dropped = parking.drop((e) => e.owned === p1);
    assert.deepEqual(
      dropped.map((e) => `${e.key}${e.seq}`),
      ['a1', 'b1'],
    );
    assert.equal(parking.size, 1);
    assert.equal(parking.park(entry('c', 1), 1_000, 1_000, 0), true, 'partition 1 has its room back');
    parking.wakeAll();
    assert.equal(parking.nextDueAt, 0);
    const decided: string[] = [];
    parking.release(10, (e) => {
      decided.push(`${e.key}${e.seq}`);
      return { until: 20_000 };
    });
    assert.deepEqual(decided.sort(), ['a2', 'c1']);
  });

  it("takes a parked job's slot from the key's start log: the slots after those parked before it", () => {
    const limits = new KeyLimits(
      new Map([['api.sync', { rate: { scope: 'vendor', max: 3, durationMs: 1000 } }]]),
    );
    assert.equal(limits.nextSlot('api.sync', 'a', 0, 50), 50, 'no start in the window: now');
    assert.equal(limits.nextSlot('api.call', 'a', 0, 50), undefined, 'no per-key rate');
    for (const at of [0, 10, 20]) limits.started('api.sync', 'a', at);
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((n) => limits.nextSlot('api.sync', 'a', n, 100)),
      [1_000, 1_010, 1_020, 2_000, 2_010],
    );
  });
});
