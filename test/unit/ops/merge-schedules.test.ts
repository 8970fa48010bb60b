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
});
