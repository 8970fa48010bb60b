import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KeyLimits, LEAD_UNITS, MAX_CONCURRENCY_DEFER_MS } from '../../../src/worker/key-limits';

/** The re-delay that brings a job back LEAD_UNITS (± half a 100 ms unit) before `slot`, from `now`. */
const backFor = (slot: number, now: number) =>
  Math.max(50, Math.floor((slot - now - (LEAD_UNITS - 0.5) * 100) / 100) * 100);

function limits() {
  return new KeyLimits(
    new Map([
      ['api.call', { concurrency: 2 }],
      ['api.sync', { rate: { scope: 'vendor', max: 3, durationMs: 1000 } }],
      ['api.both', { concurrency: 1, rate: { scope: 'vendor', max: 3, durationMs: 1000 } }],
    ]),
  );
}

describe('per-key limits, as the owner of a partition counts them', () => {
  it('caps runs at once per job type and key, and frees a slot when a run ends', () => {
    const l = limits();
    l.started('api.call', 'a', 0);
    l.started('api.call', 'a', 0);
    assert.deepEqual(l.check('api.call', 'a', 0), { kind: 'capped', limit: 'concurrency' });
    assert.equal(l.check('api.call', 'b', 0).kind, 'run');
    assert.equal(l.check('other.job', 'a', 0).kind, 'run');
    l.ended('api.call', 'a', 10);
    assert.equal(l.check('api.call', 'a', 0).kind, 'run');
  });

  it('allows max starts per key in any window (sliding), shared by the jobs naming one limit', () => {
    const l = limits();
    l.started('api.sync', 'a', 0);
    l.started('api.both', 'a', 400);
    l.started('api.sync', 'a', 900);
    const capped = l.check('api.sync', 'a', 950);
    assert.deepEqual(capped, { kind: 'capped', limit: 'rate', freeAt: 1000 });
    assert.equal(l.check('api.sync', 'b', 950).kind, 'run');
    assert.equal(l.check('api.sync', 'a', 1000).kind, 'run');
    l.started('api.sync', 'a', 1000);
    assert.deepEqual(l.check('api.sync', 'a', 1001), { kind: 'capped', limit: 'rate', freeAt: 1400 });
  });

  it('applies an override of one key and leaves the others at the planned limit', () => {
    const l = limits();
    l.setOverride('vendor', 'a', { max: 5 });
    l.setOverride('api.call', 'a', { concurrency: 1 });
    for (let i = 0; i < 4; i++) l.started('api.sync', 'a', i);
    assert.equal(l.check('api.sync', 'a', 10).kind, 'run');
    for (let i = 0; i < 3; i++) l.started('api.sync', 'b', i);
    assert.equal(l.check('api.sync', 'b', 10).kind, 'capped');
    l.started('api.call', 'a', 0);
    assert.equal(l.check('api.call', 'a', 0).kind, 'capped');
    l.setOverride('api.call', 'a', undefined);
    assert.equal(l.check('api.call', 'a', 0).kind, 'run');
  });

  it('spreads the re-delays of a key over its slots, so a backlog comes back as the key can take it', () => {
    const l = limits();
    for (let i = 0; i < 3; i++) l.started('api.sync', 'a', 0);
    const verdict = l.check('api.sync', 'a', 100);
    const delays = [0, 1, 2, 3].map(() => l.deferDelayMs({ jobName: 'api.sync', key: 'a' }, verdict, 100));
    // the key's next slots: its burst of 3 at 0 frees 3 slots at 1000, then 3 at 2000; each re-delay is whole
    // delay units (100 ms) ending LEAD_UNITS before its slot, from 100
    assert.deepEqual(
      delays,
      [1000, 1000, 1000, 2000].map((slot) => backFor(slot, 100)),
    );
    // behind the 2 of the key waiting aside: the third slot of the burst
    const fresh = limits();
    for (let i = 0; i < 3; i++) fresh.started('api.sync', 'b', i * 10);
    const capped2 = fresh.check('api.sync', 'b', 100);
    assert.equal(
      fresh.deferDelayMs({ jobName: 'api.sync', key: 'b', waitingAside: 2 }, capped2, 100),
      backFor(1020, 100),
    );
    assert.equal(
      fresh.deferDelayMs({ jobName: 'api.sync', key: 'b', waitingAside: 2 }, capped2, 100),
      backFor(2000, 100),
    );
    l.started('api.call', 'k', 0);
    l.started('api.call', 'k', 0);
    l.ended('api.call', 'k', 200);
    l.started('api.call', 'k', 0);
    const capped = l.check('api.call', 'k', 0);
    const first = l.deferDelayMs({ jobName: 'api.call', key: 'k' }, capped, 0);
    assert.equal(first, 200);
    assert.ok(l.deferDelayMs({ jobName: 'api.call', key: 'k' }, capped, 0) > first);
    for (let i = 0; i < 10_000; i++) l.deferDelayMs({ jobName: 'api.call', key: 'k' }, capped, 0);
    assert.equal(l.deferDelayMs({ jobName: 'api.call', key: 'k' }, capped, 0), MAX_CONCURRENCY_DEFER_MS);
  });

  it('sends a rate re-delay back early for its slot, to wait aside: due soon within its lead and a unit', () => {
    const l = new KeyLimits(
      new Map([['api.sync', { rate: { scope: 'vendor', max: 10, durationMs: 1000 } }]]),
      100,
    );
    for (let i = 0; i < 10; i++) l.started('api.sync', 'a', i * 100);
    const now = 950;
    const verdict = l.check('api.sync', 'a', now);
    assert.deepEqual(verdict, { kind: 'capped', limit: 'rate', freeAt: 1000 });
    assert.equal(l.isDueSoon(verdict, now), true);
    // the key's next slots, 1000 ms on from each start, one interval (100 ms) apart
    for (let n = 0; n < 30; n++) {
      const delay = l.deferDelayMs({ jobName: 'api.sync', key: 'a' }, verdict, now);
      const slot = 1000 + n * 100;
      assert.ok(delay === 50 || delay % 100 === 0, `${delay}: whole units, or the least re-delay`);
      const [earliest, latest] = [(LEAD_UNITS + 0.5) * 100, (LEAD_UNITS - 0.5) * 100];
      if (slot - now >= earliest) {
        assert.ok(
          now + delay <= slot - latest,
          `back at ${now + delay}, ${latest} ms or more before ${slot}`,
        );
        assert.ok(
          now + delay > slot - earliest,
          `back at ${now + delay}, under ${earliest} ms before ${slot}`,
        );
        // back, it is due soon: it waits aside for its slot instead of going round again
        assert.equal(l.isDueSoon({ kind: 'capped', limit: 'rate', freeAt: slot }, now + delay), true);
      }
    }
    assert.equal(
      l.isDueSoon({ kind: 'capped', limit: 'rate', freeAt: 1001 + (LEAD_UNITS + 1) * 100 }, 1000),
      false,
    );
    assert.equal(l.isDueSoon({ kind: 'capped', limit: 'concurrency' }, 1000), false);
    // back for its slot but with no room aside: round once more by the least delay, its claim kept
    const last = l.deferDelayMs({ jobName: 'api.sync', key: 'a' }, verdict, now);
    assert.equal(l.deferDelayMs({ jobName: 'api.sync', key: 'a', slotted: true }, verdict, now), 50);
    // given a slot before but not due yet (its key's slots moved on): the key's next slot, not the backlog's end
    assert.equal(
      l.deferDelayMs({ jobName: 'api.sync', key: 'a', slotted: true }, verdict, -500),
      backFor(1000, -500),
    );
    assert.equal(
      l.deferDelayMs({ jobName: 'api.sync', key: 'a' }, verdict, now),
      last + 100,
      'the next slot',
    );
  });

  it('reports the busiest keys, bounded', () => {
    const l = limits();
    for (let i = 0; i < 20; i++) l.started('api.call', `k${i}`, 0);
    l.started('api.call', 'k3', 0);
    const busiest = l.busiest(5, 0);
    assert.equal(busiest.length, 5);
    assert.deepEqual(busiest[0], { key: 'k3', running: 2, recentStarts: 0 });
  });
});
