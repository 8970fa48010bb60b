import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError, defineTopology, TopologyError, type WarrenOptions } from '../../../src';
import type { TopologyPlan } from '../../../src/ops';
import { planTopology, resolveTopologyOptions } from '../../../src/topology';
import { testWarrenOptions } from '../../../src/testing';
import { testProfile } from '../../support/test-broker';

/**
 * RabbitMQ 4.3 refuses transient (non-durable) non-exclusive queues by default. planTopology refuses to
 * build a plan holding one, so every plan the test suite (or a user) builds is checked as it is built;
 * these tests show that it does, for every queue role and for both test profiles.
 */

/** A topology with every role: job queues (quorum, classic, priority), dead, delay, leader, permit. */
const everyRole = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: {
    email: { bind: { exchange: 'jobs', pattern: 'email.*' } },
    legacy: { type: 'classic' },
    reports: { maxPriority: 5 },
    urgent: { type: 'quorum', maxPriority: 9 },
  },
});

function planWith(options: WarrenOptions): TopologyPlan {
  return planTopology({
    topology: everyRole,
    jobs: [{ name: 'email.send', queue: 'email' }],
    options: resolveTopologyOptions({
      ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
      ...(options.delay ? { delay: options.delay } : {}),
      ...(options.queues?.durable !== undefined ? { durable: options.queues.durable } : {}),
      ...(options.queues?.expiresMs !== undefined ? { queueExpiresMs: options.queues.expiresMs } : {}),
    }),
    leaderElection: true,
    limiters: [{ key: 'smtp', maxPermits: 10 }],
  });
}

function assertAllDurable(plan: TopologyPlan): void {
  const roles = new Set(plan.queues.map((q) => q.role));
  assert.deepEqual([...roles].sort(), ['dead', 'delay', 'job', 'leader', 'ledger', 'permit']);
  for (const queue of plan.queues) {
    assert.equal(queue.assertion.durable, true, `${queue.name} (${queue.role}) must be durable`);
    assert.equal(queue.assertion.exclusive, false);
  }
  for (const exchange of plan.exchanges) assert.equal(exchange.durable, true, exchange.name);
}

describe('no transient non-exclusive queue in any plan', () => {
  it('holds for the defaults, with quorum and with classic delay levels', () => {
    assertAllDurable(planWith({}));
    assertAllDurable(planWith({ delay: { queueType: 'classic', levels: 4 } }));
  });

  it("holds for the test suite's profile and for warren/testing's testWarrenOptions", () => {
    assertAllDurable(planWith(testProfile('wt-durable')));
    assertAllDurable(planWith(testWarrenOptions()));
  });

  it('refuses durable: false on a queue, whatever its type', () => {
    for (const type of ['classic', 'quorum', undefined]) {
      const queue = { ...(type ? { type } : {}), durable: false } as unknown as { type: 'classic' };
      assert.throws(
        () =>
          planTopology({
            topology: { queues: { q: queue } },
            jobs: [],
            options: resolveTopologyOptions({}),
          }),
        (error: unknown) =>
          error instanceof TopologyError && /topology\.queues\.q\.durable must be true/.test(error.message),
      );
    }
  });

  it('refuses queues.durable: false in the options', () => {
    assert.throws(
      () => resolveTopologyOptions({ durable: false } as unknown as { durable: true }),
      (error: unknown) =>
        error instanceof ConfigurationError && /queues\.durable must be true/.test(error.message),
    );
  });
});
