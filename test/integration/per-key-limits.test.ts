import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineJob, WarrenError } from '../../src';
import { ChildWorkers } from '../fixtures/child-workers';
import { ended, keyLimitFleet, mostAtOnce, startsOf } from '../fixtures/key-limit-ledger';
import { keyLimitJobs, keyLimitTopology, type KeyLimitWorkerMessage } from '../fixtures/key-limit-worker';
import { cleanup, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/**
 * Per-key limits on the broker under test (docs/guide/per-key-limits.md), across 3 worker processes (the ledger is
 * the children's start and end stamps, sent over IPC): per-key concurrency never exceeded, a per-key rate within
 * one of its max per window, and the refusals. The isolation of other keys and a SIGKILLed owner:
 * per-key-limits-isolation.test.ts; changes at run time: per-key-limit-overrides.test.ts.
 */
describe('per-key limits across worker processes', () => {
  const workers = new ChildWorkers<KeyLimitWorkerMessage>('../fixtures/key-limit-worker');
  afterEach(async () => {
    await workers.killAll();
    await cleanup();
  });

  it('never runs more than perKeyConcurrency jobs of a key at once, across 3 processes', async () => {
    const { events, publish } = await keyLimitFleet(workers, { perKey: 2, concurrency: 4 });
    const keys = ['acct-1', 'acct-2', 'acct-3', 'acct-4', 'acct-5'];
    for (let seq = 0; seq < 24; seq++)
      await Promise.all(keys.map((key) => publish('limited.call', { key, seq, ms: 40 })));
    await waitFor(() => ended(events).size >= keys.length * 24, {
      timeoutMs: 60_000,
      what: () => `${keys.length * 24} jobs to end (${ended(events).size} so far)`,
    });
    for (const key of keys) {
      const most = mostAtOnce(events, 'limited.call', key);
      assert.ok(most <= 2, `key ${key} ran ${most} jobs at once (cap 2)`);
    }
    assert.ok(
      keys.some((key) => mostAtOnce(events, 'limited.call', key) === 2),
      'some key used both of its slots',
    );
    assert.ok(new Set(events.map((e) => e.pid)).size >= 2, 'jobs ran in more than one process');
    // waiting for a slot spends no attempt, also for the jobs re-delayed through the delay levels
    assert.deepEqual(
      events.filter((e) => e.attempt !== 1),
      [],
    );
  });
  it('starts at most max jobs of a key per window, and about max while it has a backlog parked in its owner', async () => {
    const { events, moves, publish } = await keyLimitFleet(workers, {
      rateMax: 5,
      rateMs: 1000,
      concurrency: 4,
    });
    const keys = ['api-a', 'api-b', 'api-c'];
    for (let seq = 0; seq < 20; seq++)
      await Promise.all(keys.map((key) => publish('limited.rated', { key, seq, ms: 0 })));
    await waitFor(() => ended(events).size >= 60, {
      timeoutMs: 60_000,
      what: () => `60 rated jobs to end (${ended(events).size})`,
    });
    // the guide's exception: a partition's new owner starts with an empty window; none moved here
    assert.equal(moves(), 0, 'no partition changed owner during the run');
    // a backlog of 4 windows is parked in its owner until its slots: none went round the delay levels
    assert.deepEqual(
      events.filter((e) => e.kind === 'start' && e.limited !== undefined).map((e) => `${e.key}/${e.seq}`),
      [],
    );
    for (const key of keys) {
      const starts = startsOf(events, key);
      assert.equal(starts.length, 20, `key ${key} started each job once`);
      const shown = `starts, ms after the first: ${starts.map((s) => Math.round(s - starts[0]!)).join(' ')}`;
      // The limiter's own stamps (taken as it lets a job start) never hold max + 1 within 1 s. The stamps here
      // are the handler's, a little later, by however long the process took to reach it: 200 ms is allowed for
      // that on a loaded machine, so max + 1 starts never fall within 800 ms. One over, at once, would.
      for (let i = 0; i + 5 < starts.length; i++)
        assert.ok(
          starts[i + 5]! - starts[i]! >= 800,
          `key ${key}: 6 starts within 800 ms (max 5 per 1 s); ${shown}`,
        );
      // while its backlog lasts (4 whole windows of 20 jobs at 5/s): at least max - 1 per window
      for (let w = 0; w < 3; w++) {
        const inWindow = starts.filter((s) => s >= starts[0]! + w * 1000 && s < starts[0]! + (w + 1) * 1000);
        assert.ok(
          inWindow.length >= 4,
          `key ${key} started ${inWindow.length} jobs in window ${w} (max 5, +-1); ${shown}`,
        );
      }
    }
  });
  it('refuses per-key limits on a queue that cannot give each key one owner (LIMIT_INVALID)', async () => {
    const settings = { partitions: 2, concurrency: 1, perKey: 2, rateMax: 1, rateMs: 100, heartbeatMs: 200 };
    await assert.rejects(
      testWarren({
        topology: { queues: { limited: { partitions: 2 } } },
        handlers: [...keyLimitJobs(settings, () => undefined)],
      }),
      (error: unknown) => error instanceof WarrenError && error.code === 'LIMIT_INVALID',
    );
    const bare = defineJob(
      'limited.bare',
      { queue: 'limited', perKeyConcurrency: 1, limiter: { max: 1, durationMs: 100, per: 'key' } },
      async () => undefined,
    );
    const publisher = await testWarren({
      topology: keyLimitTopology(2),
      handlers: [...keyLimitJobs(settings, () => undefined), bare],
    });
    const refused = (code: string) => (error: unknown) => error instanceof WarrenError && error.code === code;
    await assert.rejects(publisher.publish(bare, {}), refused('PUBLISH_MISSING_KEY'));
    // a key function (or a per function) that gives no key: the job's key is invalid
    await assert.rejects(
      publisher.publish('limited.rated', { seq: 0, ms: 0 } as never),
      refused('PUBLISH_INVALID_KEY'),
    );
    await publisher.publish(bare, {}, { key: 'k' });
  });
});
