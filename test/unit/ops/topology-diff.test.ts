import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology } from '../../../src';
import { planTopology, resolveTopologyOptions, sideStreamsOf } from '../../../src/topology';
import { diffTopology, verifyTopology, type BrokerState } from '../../../src/ops';

const plan = planTopology({
  topology: defineTopology({
    exchanges: { jobs: { type: 'topic' } },
    queues: { email: { bind: { exchange: 'jobs', pattern: 'email.*' } } },
  }),
  jobs: [],
  options: resolveTopologyOptions({ namespace: 'app', delay: { levels: 2 } }),
  streams: {
    'job-control': { retention: { maxAgeMs: 3_600_000, maxBytes: 1000, segmentBytes: 100 } },
    schedules: {},
  },
});

/** A queue as the management API lists it: durable, not exclusive, empty, unless `fields` say otherwise. */
function brokerQueue(name: string, fields: Partial<BrokerState['queues'][number]> = {}) {
  return {
    name,
    type: 'quorum',
    durable: true,
    autoDelete: false,
    exclusive: false,
    arguments: {},
    ready: 0,
    unacked: 0,
    consumers: 0,
    ...fields,
  };
}

/** The broker exactly as the plan says, plus a process's control queue and a pause marker. */
function brokerOfPlan(): BrokerState {
  return {
    queues: [
      ...plan.queues.map((q) =>
        brokerQueue(q.name, { type: q.type, durable: q.assertion.durable, arguments: q.assertion.arguments }),
      ),
      brokerQueue('amq.gen-1', {
        type: 'classic',
        durable: false,
        autoDelete: true,
        exclusive: true,
        consumers: 1,
      }),
      brokerQueue('app.warren.paused.email'),
    ],
    exchanges: plan.exchanges.map((e) => ({ ...e })),
    bindings: [
      ...plan.bindings.map((b) => ({ ...b, arguments: {} })),
      {
        source: 'app.warren.control',
        destination: 'amq.gen-1',
        destinationType: 'queue' as const,
        pattern: '',
        arguments: {},
      },
    ],
  };
}

describe('diffTopology and verifyTopology', () => {
  it('find no drift when the broker matches, ignoring control queues and pause markers', () => {
    assert.deepEqual(diffTopology(plan, brokerOfPlan()), { inSync: true, drift: [] });
    assert.equal(verifyTopology(plan, brokerOfPlan()).ok, true);
  });

  it('compares the planned streams like every queue: retention, type, and a stream of the namespace not planned', () => {
    const broker = brokerOfPlan();
    const drifted: BrokerState = {
      ...broker,
      queues: [
        ...broker.queues
          .filter((q) => q.name !== 'app.warren.schedules')
          .map((q) =>
            q.name === 'app.warren.job-control'
              ? { ...q, arguments: { ...q.arguments, 'x-max-age': '60s' } }
              : q,
          ),
        { ...broker.queues.find((q) => q.name === 'app.warren.job-control')!, name: 'app.warren.history' },
      ],
    };
    assert.deepEqual(
      diffTopology(plan, drifted).drift.map((d) => `${d.kind} ${d.name} ${d.differences.join('; ')}`),
      [
        'different app.warren.job-control x-max-age: planned "3600s", broker "60s"',
        'missing app.warren.schedules ',
        'extra app.warren.history ',
      ],
    );
    const failed = verifyTopology(plan, drifted).checks.filter((c) => !c.ok);
    assert.deepEqual(
      failed.map((c) => `${c.subject} ${c.check}`),
      ['app.warren.schedules exists'],
    );
    const classic = {
      ...broker,
      queues: broker.queues.map((q) => (q.name === 'app.warren.schedules' ? { ...q, type: 'classic' } : q)),
    };
    assert.deepEqual(
      verifyTopology(plan, classic)
        .checks.filter((c) => !c.ok)
        .map((c) => `${c.subject} ${c.check} ${c.detail}`),
      ['app.warren.schedules queue type planned stream, broker classic'],
    );
  });

  it('lists missing, extra and different entities', () => {
    const broker = brokerOfPlan();
    const drifted: BrokerState = {
      queues: [
        ...broker.queues
          .filter((q) => q.name !== 'app.email.dead')
          .map((q) =>
            q.name === 'app.email' ? { ...q, arguments: { ...q.arguments, 'x-delivery-limit': 3 } } : q,
          ),
        { ...broker.queues[0]!, name: 'app.old' },
      ],
      exchanges: broker.exchanges,
      bindings: broker.bindings.filter((b) => b.pattern !== 'email.*'),
    };
    const drift = diffTopology(plan, drifted).drift;
    assert.deepEqual(
      drift.map((d) => `${d.kind} ${d.entity} ${d.name}`),
      [
        'missing queue app.email.dead',
        'different queue app.email',
        'extra queue app.old',
        "missing binding app.jobs -> app.email 'email.*'",
      ],
    );
    assert.deepEqual(drift[1]!.differences, ['x-delivery-limit: planned 10, broker 3']);
    const failed = verifyTopology(plan, drifted).checks.filter((c) => !c.ok);
    assert.deepEqual(
      failed.map((c) => `${c.subject} ${c.check}`),
      ['email delivery limit', 'email dead-letter wiring', 'email binding'],
    );
  });
});

describe('the indexes and the lookup queue beside the history and the dead-letter log', () => {
  const withLogs = planTopology({
    topology: { queues: { email: {} } },
    jobs: [],
    options: resolveTopologyOptions({ namespace: 'app', delay: { levels: 2 } }),
    streams: { 'job-control': {}, schedules: {}, history: {}, 'dead-letter-log': {} },
  });

  it('are deleted with the plan, and are not drift', () => {
    assert.deepEqual(sideStreamsOf(withLogs), [
      'app.warren.history.index',
      'app.warren.history.checkpoints',
      'app.warren.history.lookups',
      'app.warren.dead-log.index',
    ]);
    assert.deepEqual(sideStreamsOf(plan), []);
    const broker: BrokerState = {
      queues: [
        ...withLogs.queues.map((q) =>
          brokerQueue(q.name, { type: q.type, arguments: q.assertion.arguments }),
        ),
        ...sideStreamsOf(withLogs).map((name) => brokerQueue(name, { type: 'stream' })),
      ],
      exchanges: withLogs.exchanges.map((e) => ({ ...e })),
      bindings: withLogs.bindings.map((b) => ({ ...b, arguments: {} })),
    };
    assert.deepEqual(
      diffTopology(withLogs, broker).drift.filter((d) => d.kind === 'extra'),
      [],
    );
  });
});
