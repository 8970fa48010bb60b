import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ProcessStatus } from '../../../src/ops';
import { mergeSchedules } from '../../../src/ops/describe-plan';

function proc(id: string, isLeader: boolean, schedules: ProcessStatus['schedules']): ProcessStatus {
  return {
    id,
    host: 'h',
    pid: 1,
    version: '0.1.0',
    startedAt: '',
    connected: true,
    queues: [],
    breakers: [],
    isLeader,
    schedules,
  };
}

const daily = { id: 'daily', job: 'report.daily', pattern: '0 9 * * *', tz: 'UTC' };

describe('mergeSchedules', () => {
  it('merges by id: holders, the leader firing it, declared ones nobody holds, soonest first', () => {
    const merged = mergeSchedules(
      [
        proc('p1', false, [{ ...daily, nextFireAt: '2026-12-01T09:00:00.000Z' }]),
        proc('p2', true, [
          { ...daily, nextFireAt: '2026-12-01T09:00:00.000Z', lastFiredAt: '2026-11-30T09:00:00.000Z' },
          {
            id: 'adhoc',
            job: 'report.daily',
            pattern: '* * * * *',
            tz: 'UTC',
            nextFireAt: '2026-11-30T12:01:00.000Z',
          },
        ]),
      ],
      [
        { ...daily, nextFireAt: new Date('2026-12-01T09:00:00.000Z') },
        {
          id: 'weekly',
          job: 'report.weekly',
          pattern: '0 9 * * 1',
          tz: 'UTC',
          nextFireAt: new Date('2026-12-07T09:00:00.000Z'),
        },
      ],
      { schedules: [], paused: new Set(), isSchedulerRunning: true },
    );
    assert.deepEqual(
      merged.map((s) => [s.id, s.heldBy, s.firedBy, s.declared, s.lastFiredAt?.toISOString()]),
      [
        ['adhoc', ['p2'], 'p2', false, undefined],
        ['daily', ['p1', 'p2'], 'p2', true, '2026-11-30T09:00:00.000Z'],
        ['weekly', [], undefined, true, undefined],
      ],
    );
  });

  const stored = {
    id: 'stored',
    job: 'report.daily',
    pattern: '0 8 * * *',
    tz: 'UTC',
    nextFireAt: new Date('2026-12-01T08:00:00.000Z'),
  };
  const firing = (merged: ReturnType<typeof mergeSchedules>) =>
    merged.map((s) => [s.id, s.source, s.paused, s.isFired, s.notFired]);

  it('shows a registry schedule as not fired while no process runs the scheduler', () => {
    const merged = mergeSchedules([], [{ ...daily, nextFireAt: new Date('2026-12-01T09:00:00.000Z') }], {
      schedules: [stored],
      paused: new Set(),
      isSchedulerRunning: false,
    });
    assert.deepEqual(firing(merged), [
      ['stored', 'registry', false, false, 'no-scheduler'],
      ['daily', 'code', false, false, 'no-scheduler'],
    ]);
  });

  it('counts a registry schedule as fired by a running scheduler, unless the leader answered without it', () => {
    const view = { schedules: [stored], paused: new Set<string>(), isSchedulerRunning: true };
    assert.deepEqual(firing(mergeSchedules([], [], view)), [['stored', 'registry', false, true, undefined]]);
    const leaderWithout = proc('p1', true, []);
    assert.deepEqual(firing(mergeSchedules([leaderWithout], [], view)), [
      ['stored', 'registry', false, false, 'not-held'],
    ]);
    const leaderWith = proc('p1', true, [{ ...stored, nextFireAt: '2026-12-01T08:00:00.000Z' }]);
    const merged = mergeSchedules([leaderWith], [], view);
    assert.deepEqual(firing(merged), [['stored', 'registry', false, true, undefined]]);
    assert.equal(merged[0]!.firedBy, 'p1');
  });

  it('says a paused schedule does not fire, and a code schedule only where the leader holds it', () => {
    const merged = mergeSchedules(
      [proc('p1', false, [{ ...daily, nextFireAt: '2026-12-01T09:00:00.000Z' }]), proc('p2', true, [])],
      [],
      { schedules: [stored], paused: new Set(['stored']), isSchedulerRunning: true },
    );
    assert.deepEqual(firing(merged), [
      ['stored', 'registry', true, false, 'paused'],
      ['daily', 'code', false, false, 'not-held'],
    ]);
  });
});
