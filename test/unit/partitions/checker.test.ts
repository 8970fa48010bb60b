import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { check, PLANTED, plantFault, selfTest } from '../../partitions/checker';
import type { HistoryEvent } from '../../partitions/history';
import { cutGroups, grudgeSpec, majoritiesRing, planNemesis, SHAPES } from '../../partitions/nemesis';
import { seededRandom } from '../../partitions/random';

/** A clean history: a plain job, a delayed one, one dead-lettered, one from the outbox, two ticks, drained. */
function cleanHistory(): HistoryEvent[] {
  return [
    { t: 1_000, p: 'c1', e: 'publish', id: 'c1-1', kind: 'plain' },
    { t: 1_010, p: 'c1', e: 'confirmed', id: 'c1-1' },
    { t: 1_020, p: 'c2', e: 'start', id: 'c1-1', attempt: 1 },
    { t: 1_030, p: 'c2', e: 'complete', id: 'c1-1', attempt: 1 },
    { t: 1_100, p: 'c1', e: 'publish', id: 'c1-2', kind: 'delayed', dueAt: 5_100 },
    { t: 1_110, p: 'c1', e: 'confirmed', id: 'c1-2' },
    { t: 5_150, p: 'c3', e: 'start', id: 'c1-2', attempt: 1 },
    { t: 5_160, p: 'c3', e: 'complete', id: 'c1-2', attempt: 1 },
    { t: 5_170, p: 'c1', e: 'duplicate', id: 'c1-2' },
    { t: 1_200, p: 'c2', e: 'publish', id: 'c2-1', kind: 'dead' },
    { t: 1_210, p: 'c2', e: 'confirmed', id: 'c2-1' },
    { t: 1_220, p: 'c2', e: 'start', id: 'c2-1', attempt: 1 },
    { t: 1_300, p: 'c2', e: 'dead', id: 'c2-1', reason: 'attempts-exhausted' },
    { t: 1_400, p: 'c3', e: 'outbox-committed', id: 'c3-1', kind: 'outbox' },
    { t: 1_500, p: 'c1', e: 'start', id: 'c3-1', attempt: 1 },
    { t: 1_510, p: 'c1', e: 'complete', id: 'c3-1', attempt: 1 },
    { t: 1_600, p: 'c2', e: 'publish', id: 'c2-2', kind: 'plain' },
    { t: 16_600, p: 'c2', e: 'publish-failed', id: 'c2-2', code: 'PUBLISH_TIMEOUT' },
    { t: 2_000, p: 'c1', e: 'tick', id: 'tick@2026-12-04T18:00:02.000Z' },
    { t: 4_000, p: 'c2', e: 'tick', id: 'tick@2026-12-04T18:00:04.000Z' },
    { t: 20_000, p: 'drain', e: 'dead-letter', id: 'c2-1', reason: 'attempts-exhausted' },
    { t: 20_001, p: 'drain', e: 'queue-depth', queue: 'ns.work', role: 'job', messages: 0 },
    { t: 20_002, p: 'drain', e: 'queue-depth', queue: 'ns.warren.delay.03', role: 'delay', messages: 0 },
    { t: 20_003, p: 'drain', e: 'queue-depth', queue: 'ns.work.dead', role: 'parking', messages: 1 },
  ];
}

describe('the partition checker', () => {
  it('passes a clean history and counts what it saw', () => {
    const { verdicts, counts } = check(cleanHistory());
    assert.equal(verdicts.ok, true, JSON.stringify(verdicts));
    assert.equal(counts.confirmed, 4);
    assert.equal(counts.completed, 3);
    assert.deepEqual(counts.deadLettered, { 'attempts-exhausted': 1 });
    assert.deepEqual(counts.failedPublishes, { PUBLISH_TIMEOUT: 1 });
    assert.equal(counts.duplicatesCaught, 1);
    assert.equal(counts.ticks, 2);
  });

  it('catches a planted loss, duplicate, early job and double tick', () => {
    for (const fault of PLANTED) assert.ok(plantFault(cleanHistory(), fault), `${fault} can be planted`);
    assert.deepEqual(selfTest(cleanHistory()), { caught: [...PLANTED], missed: [], notPlantable: [] });
    assert.deepEqual(check(plantFault(cleanHistory(), 'loss')!).verdicts.lost, ['c1-1']);
    assert.deepEqual(check(plantFault(cleanHistory(), 'early')!).verdicts.early, [
      { id: 'c1-2', earlyByMs: 500 },
    ]);
  });

  it('counts a job dead-lettered only by the worker event, not in the parking queue, as lost', () => {
    const history = cleanHistory().filter((e) => e.e !== 'dead-letter');
    assert.deepEqual(check(history).verdicts.lost, ['c2-1']);
  });

  it('flags messages left in a job queue or a delay level, a letter without a reason, and a run never drained', () => {
    const history: HistoryEvent[] = [
      ...cleanHistory(),
      { t: 20_004, p: 'drain', e: 'queue-depth', queue: 'ns.warren.delay.05', role: 'delay', messages: 2 },
      { t: 20_005, p: 'drain', e: 'dead-letter', id: 'c9-9', reason: '' },
    ];
    const { verdicts } = check(history);
    assert.deepEqual(verdicts.stuck, [{ queue: 'ns.warren.delay.05', messages: 2 }]);
    assert.deepEqual(verdicts.deadWithoutReason, ['c9-9']);
    assert.equal(check(cleanHistory().filter((e) => e.e !== 'queue-depth')).verdicts.ok, false);
  });

  it('flags what a quorum queue holds beyond its message count: checked out, or dead-lettered and not handed on', () => {
    const held = (queue: string, role: 'job' | 'delay' | 'parking', checkedOut: number, waiting: number) =>
      ({
        t: 20_010,
        p: 'drain',
        e: 'queue-held',
        queue,
        role,
        ready: 0,
        checkedOut,
        deadLetterWaiting: waiting,
        deadLetterUnconfirmed: waiting > 0 ? 1 : waiting,
      }) as const;
    const history: HistoryEvent[] = [
      ...cleanHistory(),
      held('ns.work', 'job', 0, 0),
      held('ns.warren.delay.00', 'delay', 0, 3),
      held('ns.work.dead', 'parking', 2, 0),
      // unread (its leader did not answer): not counted either way
      held('ns.ticks', 'job', -1, -1),
    ];
    const { verdicts } = check(history);
    assert.deepEqual(verdicts.stuck, [
      {
        queue: 'ns.warren.delay.00 (checked out 0, dead-lettered and waiting 3, unconfirmed 1)',
        messages: 4,
      },
    ]);
    assert.equal(verdicts.ok, false);
  });
});

describe('the partition nemesis', () => {
  it('draws the same schedule from the same seed, and another from another seed', () => {
    for (const shape of SHAPES) {
      const plan = planNemesis(shape, 5, 180_000, 42);
      assert.deepEqual(planNemesis(shape, 5, 180_000, 42), plan, shape);
      assert.ok(plan.length > 0, `${shape} does something`);
      assert.ok(
        plan.every((step) => step.atMs <= 180_000),
        `${shape} stays within the run`,
      );
      assert.deepEqual(plan.at(-1)?.op, { op: 'heal' }, `${shape} ends healed`);
    }
    assert.notDeepEqual(
      planNemesis('random-halves', 5, 180_000, 1),
      planNemesis('random-halves', 5, 180_000, 2),
    );
  });

  it('cuts the clients with their home nodes, symmetrically, and lossy links with their probability', () => {
    assert.equal(
      grudgeSpec(cutGroups([['n1'], ['n2', 'n3']], 3)),
      'n1<n2,c2,n3,c3 c1<n2,n3 n2<n1,c1 c2<n1 n3<n1,c1 c3<n1',
    );
    assert.match(grudgeSpec(cutGroups([['n1'], ['n2', 'n3']], 3, 0.3)), /^n1<n2@0\.3,c2@0\.3/);
  });

  it('gives every node of a majorities ring a majority, and no two nodes the same one', () => {
    const grudges = majoritiesRing(seededRandom(7), 5);
    const seen = ['n1', 'n2', 'n3', 'n4', 'n5'].map((node) => {
      const dropped = new Set(grudges[node]!.map((g) => g.from));
      return ['n1', 'n2', 'n3', 'n4', 'n5'].filter((n) => !dropped.has(n)).join(',');
    });
    for (const view of seen) assert.equal(view.split(',').length, 3);
    assert.equal(new Set(seen).size, 5);
  });
});
