import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WarrenError } from '../../../src';
import { buildPublish } from '../../../src/publisher/publish-message';
import { laneOf } from '../../../src/message';
import { planTopology, resolveTopologyOptions, type TopologyDeclaration } from '../../../src/topology';

const options = resolveTopologyOptions({ namespace: 'app', delay: { levels: 4, unitMs: 100 } });
const unordered: TopologyDeclaration = { queues: { api: { partitions: { count: 4, order: 'none' } } } };

function plan(topology: TopologyDeclaration, jobs: readonly object[]) {
  return planTopology({ topology, jobs: jobs as never, options });
}

function refuses(topology: TopologyDeclaration, jobs: readonly object[], words: RegExp): void {
  assert.throws(
    () => plan(topology, jobs),
    (error: unknown) =>
      error instanceof WarrenError && error.code === 'LIMIT_INVALID' && words.test(error.message),
  );
}

describe('per-key limits in the topology plan', () => {
  it('plans perKeyConcurrency and a per-key rate on a queue with unordered partitions', () => {
    const planned = plan(unordered, [
      { name: 'api.call', queue: 'api', perKeyConcurrency: 2, key: (d: { a: string }) => d.a },
      { name: 'api.sync', queue: 'api', limiter: { max: 10, durationMs: 1000, per: 'key' } },
    ]);
    assert.deepEqual(planned.jobs.get('api.call')?.keyLimits, { concurrency: 2 });
    assert.deepEqual(planned.jobs.get('api.sync')?.keyLimits, {
      rate: { scope: 'api.sync', max: 10, durationMs: 1000 },
    });
    const parts = planned.queues.filter((q) => q.role === 'job' && q.lane?.partition);
    assert.equal(parts.length, 4);
    assert.ok(parts.every((q) => q.role === 'job' && q.lane?.ordered === undefined));
    // no permit queue for a per-key limit: the owner of the key's partition counts it
    assert.ok(!planned.queues.some((q) => q.name.includes('permits')));
  });

  it("routes a job by its limiter's per value: it is the job's key", () => {
    const planned = plan(unordered, [
      {
        name: 'api.call',
        queue: 'api',
        limiter: { max: 5, durationMs: 1000, per: (d: { apiKey: string }) => d.apiKey },
      },
    ]);
    const job = planned.jobs.get('api.call')!;
    const built = buildPublish(
      planned.delay,
      { maxBodyBytes: 1e6, timeoutMs: 1000 },
      job,
      { apiKey: 'k-7' },
      {},
      0,
    );
    assert.equal(built.message.routingKey, `app.api.part-4.${laneOf('k-7', 4)}`);
    assert.equal(built.message.properties.headers?.['warren-key'], 'k-7');
  });

  it('refuses per-key limits on a queue without partitions, or with ordered ones', () => {
    const job = { name: 'api.call', queue: 'api', perKeyConcurrency: 2 };
    refuses({ queues: { api: {} } }, [job], /needs its queue 'api' to have partitions/);
    refuses({ queues: { api: { partitions: 4 } } }, [job], /order: 'none'/);
    refuses({ queues: { api: { fairness: true } } }, [job], /partitions/);
  });

  it('refuses bad values, naming the path, the rule and the value', () => {
    for (const bad of [0, 1.5, -1, 10_001, '2'])
      refuses(
        unordered,
        [{ name: 'api.call', queue: 'api', perKeyConcurrency: bad }],
        /perKeyConcurrency must be an integer/,
      );
    refuses(
      unordered,
      [{ name: 'api.call', queue: 'api', limiter: { max: 0, durationMs: 1000, per: 'key' } }],
      /limiter.max/,
    );
    refuses(
      unordered,
      [{ name: 'api.call', queue: 'api', limiter: { max: 1, durationMs: 5, per: 'key' } }],
      /limiter.durationMs/,
    );
    refuses(
      unordered,
      [{ name: 'api.call', queue: 'api', limiter: { max: 1, durationMs: 100, per: 'apiKey' } }],
      /limiter.per must be/,
    );
    refuses(
      unordered,
      [
        {
          name: 'api.call',
          queue: 'api',
          key: (d: { a: string }) => d.a,
          limiter: { max: 1, durationMs: 100, per: (d: { b: string }) => d.b },
        },
      ],
      /key function too/,
    );
  });

  it('refuses a per-key limit that shares its key with a global one, or with a job on another queue', () => {
    const topology: TopologyDeclaration = {
      queues: {
        api: { partitions: { count: 2, order: 'none' } },
        other: { partitions: { count: 2, order: 'none' } },
      },
    };
    refuses(
      topology,
      [
        { name: 'api.call', queue: 'api', limiter: { max: 1, durationMs: 100, key: 'shared', per: 'key' } },
        { name: 'api.plain', queue: 'api', limiter: { max: 1, durationMs: 100, key: 'shared' } },
      ],
      /global limit/,
    );
    refuses(
      topology,
      [
        { name: 'api.call', queue: 'api', limiter: { max: 1, durationMs: 100, key: 'vendor', per: 'key' } },
        {
          name: 'other.call',
          queue: 'other',
          limiter: { max: 1, durationMs: 100, key: 'vendor', per: 'key' },
        },
      ],
      /one partitioned queue/,
    );
    refuses(
      topology,
      [
        { name: 'api.call', queue: 'api', limiter: { max: 1, durationMs: 100, key: 'vendor', per: 'key' } },
        { name: 'api.more', queue: 'api', limiter: { max: 2, durationMs: 100, key: 'vendor', per: 'key' } },
      ],
      /instead of 1 per 100 ms/,
    );
  });

  it("refuses an order other than 'per-key' or 'none'", () => {
    assert.throws(
      () => plan({ queues: { api: { partitions: { count: 2, order: 'sorted' as never } } } }, []),
      /order must be 'per-key' or 'none'/,
    );
  });
});
