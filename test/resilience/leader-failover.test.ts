import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChildWorkers } from '../fixtures/child-workers';
import { cronTopology, Tick, type CronWorkerMessage } from '../fixtures/cron-worker';
import { childLogs, isLeader, leadershipOf, recordTicks } from '../fixtures/tick-recorder';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { passTimeToMidSecond, waitFor } from '../support/wait-for';

// Freezes a client process, not the broker: this test shares the broker on 5672 with the integration tests.

const HEARTBEAT_S = 2;
const ticks = recordTicks();

describe('cron leader failover when the leader freezes', () => {
  const workers = new ChildWorkers<CronWorkerMessage>('../fixtures/cron-worker');
  after(async () => {
    await workers.killAll();
    await cleanup();
  });

  it(`hands leadership on after about ${HEARTBEAT_S * 2}-${HEARTBEAT_S * 3} s (heartbeat ${HEARTBEAT_S} s), and the leader that wakes up fires nothing stale`, async () => {
    const namespace = testNamespace('freeze');
    const recorder = await testWarren({ namespace, topology: cronTopology, handlers: [ticks.handler] });
    await recorder.start();
    await testWarren({ namespace, topology: cronTopology, jobs: [Tick] }); // declares the election queues for cleanup; never started

    const children = [0, 1, 2].map(() => workers.fork([namespace, 'run-once', String(HEARTBEAT_S)]));
    await waitFor(() => children.every((c) => c.messages.some((m) => m.kind === 'ready')), {
      timeoutMs: 20_000,
      what: 'three workers',
    });
    const frozen = await waitFor(
      () => (children.filter(isLeader).length === 1 ? children.find(isLeader) : undefined),
      { what: 'one leader' },
    );
    await waitFor(() => ticks.deliveries.size >= 3, { what: 'three ticks' });
    await passTimeToMidSecond();

    const stoppedAt = Date.now();
    frozen.child.kill('SIGSTOP');
    const survivors = children.filter((c) => c !== frozen);
    const successor = await waitFor(() => survivors.find(isLeader), {
      timeoutMs: HEARTBEAT_S * 5_000,
      intervalMs: 10,
      what: 'a new leader',
    });
    const takeoverAt = leadershipOf(successor).at(-1)!.at;
    const failoverMs = takeoverAt - stoppedAt;
    console.log(`# leader failover after SIGSTOP (heartbeat ${HEARTBEAT_S} s): ${failoverMs} ms`);
    assert.ok(
      failoverMs >= HEARTBEAT_S * 1000 && failoverMs <= HEARTBEAT_S * 4000,
      `took over after ${failoverMs} ms`,
    );

    await waitFor(() => ticks.firedTimes().some((t) => t >= takeoverAt + 1_000), {
      what: 'the new leader to fire',
    });
    const resumedAt = Date.now();
    frozen.child.kill('SIGCONT');
    await waitFor(() => leadershipOf(frozen).at(-1)?.isLeader === false, {
      what: 'the woken leader to learn it lost leadership',
    });
    await waitFor(() => ticks.firedTimes().some((t) => t >= resumedAt + 3_000), {
      what: 'three ticks after the old leader woke up',
    });
    try {
      assert.equal(children.filter(isLeader).length, 1, 'exactly one leader');

      assert.deepEqual(
        [...ticks.deliveries].filter(([, count]) => count > 1),
        [],
        'no tick delivered twice',
      );
      const times = ticks.firedTimes();
      const before = times.filter((t) => t < stoppedAt);
      const after = times.filter((t) => t > stoppedAt);
      const lastBefore = before.at(-1)!;
      // run-once: of the ticks that fell between the freeze and the takeover, only the latest fired, by the new
      // leader.
      const gap = after.filter((t) => t <= takeoverAt);
      assert.deepEqual(
        gap.map((t) => new Date(t).toISOString()),
        [new Date(Math.floor(takeoverAt / 1000) * 1000).toISOString()].filter(
          (t) => Date.parse(t) > lastBefore,
        ),
      );
      const fromTakeover = after.filter((t) => t >= Math.floor(takeoverAt / 1000) * 1000);
      assert.deepEqual(
        fromTakeover.slice(1).map((t, i) => t - fromTakeover[i]!),
        Array(fromTakeover.length - 1).fill(1000),
        'every tick after the takeover fired once',
      );
    } catch (error) {
      // which process fired, caught up or failed to, and when
      console.log(
        `# the children's logs (stopped ${stoppedAt}, took over ${takeoverAt}):\n${childLogs(children)}`,
      );
      throw error;
    }
  });
});
