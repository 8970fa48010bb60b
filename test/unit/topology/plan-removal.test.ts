import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  defineTopology,
  MAX_DELAY_LEVELS,
  planNamespaceRemoval,
  planTopology,
  resolveTopologyOptions,
} from '../../../src/topology';

const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: { email: { bind: { exchange: 'jobs', pattern: 'email.*' } } },
});

function plan(namespace: string, levels = 3) {
  return planTopology({
    topology,
    jobs: [],
    options: resolveTopologyOptions({ namespace, delay: { levels } }),
  });
}

describe('planNamespaceRemoval', () => {
  it('names every entity of the plan, by exact name', () => {
    const p = plan('a');
    const removal = planNamespaceRemoval(p);
    for (const q of p.queues) assert.ok(removal.queues.includes(q.name), q.name);
    for (const e of p.exchanges) assert.ok(removal.exchanges.includes(e.name), e.name);
  });

  it("adds what other processes' options may have declared: every stream, cron, delay level and marker", () => {
    const removal = planNamespaceRemoval(plan('a', 3));
    for (const name of [
      'a.warren.dead-log',
      'a.warren.history',
      'a.warren.aggregates',
      'a.warren.aggregates.hours',
      'a.warren.aggregates.days',
      'a.warren.marks',
      'a.warren.schedules',
      'a.warren.job-control',
      'a.warren.leader',
      'a.warren.cron-ledger',
      'a.warren.paused.email',
      `a.warren.delay.${MAX_DELAY_LEVELS - 1}`,
    ])
      assert.ok(removal.queues.includes(name), name);
    assert.equal(removal.queues.at(-1), 'a.warren.removing', 'the removal marker goes last');
    for (const name of [
      'a.warren.control',
      'a.warren.delay.delivery',
      'a.warren.delay.00',
      'a.jobs',
      'a.email.dlx',
    ])
      assert.ok(removal.exchanges.includes(name), name);
    assert.equal(new Set(removal.queues).size, removal.queues.length, 'each name once');
  });

  it("never names an entity of a nested namespace: removing 'a' leaves 'a.b' whole", () => {
    const outer = planNamespaceRemoval(plan('a'));
    const inner = planNamespaceRemoval(plan('a.b'));
    const names = new Set([...outer.queues, ...outer.exchanges]);
    assert.deepEqual(
      [...inner.queues, ...inner.exchanges].filter((n) => names.has(n)),
      [],
    );
    assert.ok([...names].every((n) => n.startsWith('a.') && !n.startsWith('a.b.')));
  });
});
