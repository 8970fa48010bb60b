import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HEADERS, PublishError, TopologyError } from '../../../src';
import {
  isDeclaredJobQueue,
  planTopology,
  resolveTopologyOptions,
  type TopologyDeclaration,
} from '../../../src/topology';
import { buildPublish } from '../../../src/publisher/publish-message';
import { laneOf } from '../../../src/message';

const options = resolveTopologyOptions({ namespace: 'app', delay: { levels: 4, unitMs: 100 } });
const jobs = [{ name: 'import.row', queue: 'imports', key: (data: { tenant: string }) => data.tenant }];

function plan(topology: TopologyDeclaration) {
  return planTopology({ topology, jobs: jobs as never, options });
}

describe('lanes in the topology plan', () => {
  it('plans 8 lanes behind a queue with fairness: true, sharing its parking queue', () => {
    const planned = plan({ queues: { imports: { fairness: true } } });
    const lanes = planned.queues.filter((q) => q.role === 'job' && q.lane !== undefined);
    assert.deepEqual(
      lanes.map((q) => q.name),
      Array.from({ length: 8 }, (_, i) => `app.imports.lane-8.${i}`),
    );
    const intake = planned.queues.find((q) => q.name === 'app.imports');
    assert.ok(intake && intake.role === 'job');
    assert.deepEqual(
      intake.fairness?.lanes,
      lanes.map((q) => q.name),
    );
    for (const lane of lanes) {
      assert.ok(lane.role === 'job');
      assert.equal(lane.deadQueue, 'app.imports.dead');
      assert.equal(lane.key, 'imports');
      assert.deepEqual(lane.assertion, intake.assertion);
      // delayed jobs and retries come back to the lane they left
      assert.ok(
        planned.bindings.some(
          (b) => b.destination === lane.name && b.source === planned.delay.deliveryExchange,
        ),
      );
    }
    assert.deepEqual(
      planned.queues.filter(isDeclaredJobQueue).map((q) => q.name),
      ['app.imports'],
    );
  });

  it('plans the previous lanes as draining while the lane count changes', () => {
    const planned = plan({ queues: { imports: { fairness: { lanes: 4, previousLanes: 2 } } } });
    const lanes = planned.queues.filter((q) => q.role === 'job' && q.lane !== undefined);
    assert.deepEqual(
      lanes.map((q) => (q.role === 'job' ? `${q.name}:${q.lane?.draining}` : '')),
      [
        'app.imports.lane-4.0:false',
        'app.imports.lane-4.1:false',
        'app.imports.lane-4.2:false',
        'app.imports.lane-4.3:false',
        'app.imports.lane-2.0:true',
        'app.imports.lane-2.1:true',
      ],
    );
    assert.equal(planned.jobs.get('import.row')?.lanes?.length, 4);
  });

  it('refuses what fair share cannot keep, saying why', () => {
    const refuses = (decl: TopologyDeclaration, detail: RegExp) =>
      assert.throws(
        () => plan(decl),
        (e: unknown) => e instanceof TopologyError && detail.test(e.message),
      );
    refuses(
      { queues: { imports: { fairness: true, maxPriority: 5 } } },
      /maxPriority: the fair-share scheduler picks jobs by key/,
    );
    refuses({ queues: { imports: { fairness: true, singleActiveConsumer: true } } }, /singleActiveConsumer/);
    refuses(
      { queues: { imports: { fairness: { lanes: 1 } } } },
      /lanes must be an integer from 2 to 64 \(got 1\)/,
    );
    refuses({ queues: { imports: { fairness: { lanes: 65 } } } }, /got 65/);
    refuses(
      { queues: { imports: { fairness: { lanes: 4, previousLanes: 4 } } } },
      /previousLanes must differ/,
    );
    refuses(
      { queues: { imports: { fairness: { weights: { a: 0 } } } } },
      /weights\['a'\] must be a number above 0/,
    );
    refuses(
      { queues: { imports: { fairness: { weights: { '': 1 } } } } },
      /weights key "" must not be empty/,
    );
  });
});

describe('publishing a keyed job', () => {
  const planned = plan({ queues: { imports: { fairness: { lanes: 4 } } } });
  const job = planned.jobs.get('import.row')!;
  const limits = { maxBodyBytes: 10_000, timeoutMs: 5_000 };
  const now = 1_700_000_000_000;

  it("sends it to its key's lane with the key in warren-key", () => {
    const { message } = buildPublish(planned.delay, limits, job, { tenant: 'acme' }, { jobId: 'j' }, now);
    assert.equal(message.exchange, '');
    assert.equal(message.routingKey, `app.imports.lane-4.${laneOf('acme', 4)}`);
    assert.equal(message.properties.headers?.[HEADERS.key], 'acme');
  });

  it("takes the publish's key over the key function, and routes a delay through the levels to the lane", () => {
    const { message } = buildPublish(
      planned.delay,
      limits,
      job,
      { tenant: 'acme' },
      { jobId: 'j', key: 'zeta', delayMs: 300 },
      now,
    );
    assert.equal(message.properties.headers?.[HEADERS.key], 'zeta');
    assert.ok(message.routingKey.endsWith(`.app.imports.lane-4.${laneOf('zeta', 4)}`));
  });

  it('refuses a key function that throws or returns no string', () => {
    assert.throws(
      () => buildPublish(planned.delay, limits, job, {}, { jobId: 'j' }, now),
      (e: unknown) => e instanceof PublishError && e.code === 'PUBLISH_INVALID_KEY' && e.jobId === 'j',
    );
    assert.throws(
      () => buildPublish(planned.delay, limits, job, null, { jobId: 'j' }, now),
      (e: unknown) =>
        e instanceof PublishError && e.code === 'PUBLISH_INVALID_KEY' && /threw/.test(e.message),
    );
  });

  it('sends a job without a key to the queue itself (the default lane)', () => {
    const unkeyed = { ...job, key: undefined };
    const { message } = buildPublish(planned.delay, limits, unkeyed, {}, { jobId: 'j' }, now);
    assert.equal(message.routingKey, job.route.routingKey);
    assert.equal(message.properties.headers?.[HEADERS.key], undefined);
  });
});
