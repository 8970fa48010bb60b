import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PublishError, TopologyError } from '../../../src';
import { buildPublish } from '../../../src/publisher/publish-message';
import { laneOf } from '../../../src/message';
import { planTopology, resolveTopologyOptions, type TopologyDeclaration } from '../../../src/topology';

const options = resolveTopologyOptions({ namespace: 'app', delay: { levels: 4, unitMs: 100 } });
const jobs = [
  { name: 'ledger.post', queue: 'ledger', key: (data: { account: string }) => data.account },
  { name: 'ledger.note', queue: 'ledger' },
];

function plan(topology: TopologyDeclaration) {
  return planTopology({ topology, jobs: jobs as never, options });
}

describe('ordered partitions in the topology plan', () => {
  it('plans N single-active-consumer partitions named with their count, sharing the parking queue', () => {
    const planned = plan({ queues: { ledger: { partitions: 4 } } });
    const parts = planned.queues.filter((q) => q.role === 'job' && q.lane?.ordered);
    assert.deepEqual(
      parts.map((q) => q.name),
      [0, 1, 2, 3].map((i) => `app.ledger.part-4.${i}`),
    );
    for (const part of parts) {
      assert.ok(part.role === 'job');
      assert.equal(part.deadQueue, 'app.ledger.dead');
      assert.equal(part.assertion.arguments['x-single-active-consumer'], true);
      assert.equal(part.assertion.arguments['x-queue-type'], 'quorum');
    }
    const queue = planned.queues.find((q) => q.name === 'app.ledger');
    assert.ok(queue?.role === 'job');
    assert.equal(queue.assertion.arguments['x-single-active-consumer'], undefined);
    assert.ok(planned.exchanges.some((e) => e.name === 'app.warren.members.ledger' && e.type === 'fanout'));
    assert.equal(planned.jobs.get('ledger.post')?.partitioned, true);
  });

  it("publishes a keyed job to its key's partition and refuses one without a key", () => {
    const planned = plan({ queues: { ledger: { partitions: 4 } } });
    const post = planned.jobs.get('ledger.post')!;
    const built = buildPublish(
      planned.delay,
      { maxBodyBytes: 1e6, timeoutMs: 1000 },
      post,
      { account: 'a-7' },
      {},
      0,
    );
    assert.equal(built.message.routingKey, `app.ledger.part-4.${laneOf('a-7', 4)}`);
    assert.throws(
      () =>
        buildPublish(
          planned.delay,
          { maxBodyBytes: 1e6, timeoutMs: 1000 },
          planned.jobs.get('ledger.note')!,
          {},
          {},
          0,
        ),
      (error: unknown) => error instanceof PublishError && error.code === 'PUBLISH_MISSING_KEY',
    );
  });

  it('plans the previous count as draining partitions while the count changes', () => {
    const planned = plan({ queues: { ledger: { partitions: { count: 4, previous: 2 } } } });
    const draining = planned.queues.filter((q) => q.role === 'job' && q.lane?.ordered && q.lane.draining);
    assert.deepEqual(
      draining.map((q) => q.name),
      ['app.ledger.part-2.0', 'app.ledger.part-2.1'],
    );
    assert.equal(planned.jobs.get('ledger.post')?.lanes?.length, 4);
  });

  it('refuses a count out of range and the settings that contradict one owner per partition', () => {
    for (const partitions of [0, 65, 2.5])
      assert.throws(() => plan({ queues: { ledger: { partitions } } }), /from 1 to 64/);
    assert.throws(
      () => plan({ queues: { ledger: { partitions: { count: 4, previous: 4 } } } }),
      /must differ/,
    );
    for (const extra of [
      { fairness: true as const },
      { maxPriority: 2 },
      { singleActiveConsumer: true },
      { inPlaceRetryMs: 1000 },
    ])
      assert.throws(
        () => plan({ queues: { ledger: { partitions: 4, ...extra } } }),
        (error: unknown) => error instanceof TopologyError && /cannot be combined with/.test(error.message),
      );
  });
});
