import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChildWorkers } from '../fixtures/child-workers';
import { cronTopology, Tick, type CronWorkerMessage } from '../fixtures/cron-worker';
import { isLeader, leadershipOf, recordTicks, type CronChild } from '../fixtures/tick-recorder';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { passTimeToMidSecond, waitFor } from '../support/wait-for';

const ticks = recordTicks();
const alive = (w: CronChild) => w.child.exitCode === null && w.child.signalCode === null;

describe('cron across three processes', () => {
  const workers = new ChildWorkers<CronWorkerMessage>('../fixtures/cron-worker');
  after(async () => {
    await workers.killAll();
    await cleanup();
  });

  it('elects exactly one leader, fails over within a second after SIGKILL, and fires every tick exactly once', async () => {
    const namespace = testNamespace('cron3');
    const recorder = await testWarren({ namespace, topology: cronTopology, handlers: [ticks.handler] });
    await recorder.start();
    // Declares the election queues too (it carries @Cron), so that cleanup() deletes them; never started, so
    // it never leads.
    await testWarren({ namespace, topology: cronTopology, jobs: [Tick] });

    const children = [0, 1, 2].map(() => workers.fork([namespace, 'skip', '5']));
    await waitFor(() => children.every((c) => c.messages.some((m) => m.kind === 'ready')), {
      timeoutMs: 20_000,
      what: 'three workers to start',
    });
    const leader = await waitFor(
      () => (children.filter(isLeader).length === 1 ? children.find(isLeader) : undefined),
      { what: 'one leader' },
    );
    await waitFor(() => ticks.deliveries.size >= 3, { what: 'three ticks before the kill' });
    assert.equal(children.filter(isLeader).length, 1);

    // Kill mid-second, so that the tick under way is unambiguous.
    await passTimeToMidSecond();
    const killedAt = Date.now();
    leader.child.kill('SIGKILL');
    const survivors = children.filter((c) => c !== leader);
    const successor = await waitFor(() => survivors.find(isLeader), {
      timeoutMs: 5_000,
      what: 'a new leader',
    });
    const failoverMs = leadershipOf(successor).at(-1)!.at - killedAt;
    console.log(`# leader failover after SIGKILL: ${failoverMs} ms`);
    assert.ok(failoverMs < 1000, `took over after ${failoverMs} ms`);

    await waitFor(() => ticks.firedTimes().some((t) => t >= killedAt + 3_000), {
      what: 'three ticks after the takeover',
    });
    await leader.exited;
    assert.equal(survivors.filter(isLeader).length, 1, 'exactly one leader among the survivors');
    assert.ok(survivors.every(alive));

    const times = ticks.firedTimes();
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    assert.deepEqual(
      gaps,
      Array(gaps.length).fill(1000),
      `every second between ${new Date(times[0]!).toISOString()} and ${new Date(times.at(-1)!).toISOString()} fired`,
    );
    const doubles = [...ticks.deliveries].filter(([, count]) => count > 1);
    assert.deepEqual(doubles, [], 'no tick fired twice');
  });
});
