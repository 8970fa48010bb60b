import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, type JobHandler } from '../../src';
import { createRecordingLogger } from '../../src/testing';
import { cronTopology, Tick } from '../fixtures/cron-worker';
import { recordTicks } from '../fixtures/tick-recorder';
import { brokerUnderTest } from '../support/broker-under-test';
import {
  cleanConfiguredNode,
  rabbitCtl,
  startConfiguredNode,
  type PrivateNode,
} from '../support/private-broker';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { closePrivateWarrens, privateWarren } from './private-warren';

// The broker's delivery acknowledgement timeout, lowered to seconds on a private node of its own.
// RabbitMQ 3.x checks it at every channel tick (60 s by default, lowered here so new channels check
// twice a second) and closes the channel; 4.3 times out only quorum-queue consumers, by cancelling them.
const TIMEOUT_MS = 3_000;
const PAST_TIMEOUTS = 4;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(`past the broker's consumer timeout (consumer_timeout ${TIMEOUT_MS} ms)`, () => {
  let node: PrivateNode;
  before(async () => {
    await cleanConfiguredNode('wshort');
    node = await startConfiguredNode('wshort', `consumer_timeout = ${TIMEOUT_MS}\n`);
    await rabbitCtl('wshort', 'eval', 'application:set_env(rabbit, channel_tick_interval, 500).');
  });
  after(async () => {
    await closePrivateWarrens();
    await cleanConfiguredNode('wshort');
  });

  it(`keeps one cron leader through ${PAST_TIMEOUTS} timeouts and fires every tick exactly once`, async () => {
    const namespace = testNamespace('ctimeout');
    const ticks = recordTicks();
    const recorder = await privateWarren(node.url, {
      namespace,
      topology: cronTopology,
      handlers: [ticks.handler],
    });
    await recorder.start();
    const changes: { member: number; isLeader: boolean; at: number }[] = [];
    for (const member of [0, 1]) {
      const warren = await privateWarren(node.url, {
        namespace,
        topology: cronTopology,
        jobs: [Tick],
        connection: { consumerTimeoutMs: TIMEOUT_MS },
      });
      warren.on('leadershipChanged', ({ isLeader }) => changes.push({ member, isLeader, at: Date.now() }));
      await warren.start();
    }
    await waitFor(() => changes.length > 0, { what: 'a leader' });
    const electedAt = changes[0]!.at;
    await sleep(TIMEOUT_MS * PAST_TIMEOUTS);
    const endAt = Date.now();
    await waitFor(() => ticks.firedTimes().some((t) => t >= endAt - 1_000), { what: 'the last ticks' });

    assert.deepEqual(
      changes.map(({ member, isLeader }) => ({ member, isLeader })),
      [{ member: changes[0]!.member, isLeader: true }],
      `leadership should never move: ${JSON.stringify(changes)}`,
    );
    const fired = ticks.firedTimes().filter((t) => t > electedAt + 1_000 && t < endAt);
    assert.ok(fired.length >= (TIMEOUT_MS * PAST_TIMEOUTS) / 1_000 - 2, `fired ${fired.length} ticks`);
    for (let i = 1; i < fired.length; i++)
      assert.equal(
        fired[i]! - fired[i - 1]!,
        1_000,
        `a tick missing after ${new Date(fired[i - 1]!).toISOString()}`,
      );
    assert.ok(
      [...ticks.deliveries.values()].every((count) => count === 1),
      'a tick ran twice',
    );
  });

  it('keeps refilling rate-limit permits past the timeout', async () => {
    const namespace = testNamespace('climit');
    const ranAt: number[] = [];
    @Job('limited.call', { queue: 'limited', concurrency: 4, limiter: { max: 2, durationMs: 1_000 } })
    class Limited implements JobHandler<{ n: number }> {
      handle() {
        ranAt.push(Date.now());
      }
    }
    const warren = await privateWarren(node.url, {
      namespace,
      topology: defineTopology({ queues: { limited: {} } }),
      handlers: [new Limited()],
      connection: { consumerTimeoutMs: TIMEOUT_MS },
    });
    const jobs = 2 * Math.ceil((TIMEOUT_MS * PAST_TIMEOUTS) / 1_000);
    for (let n = 0; n < jobs; n++) await warren.publish(Limited, { n });
    const startedAt = Date.now();
    await warren.start();
    await waitFor(() => ranAt.length === jobs, { what: `${jobs} limited jobs`, timeoutMs: 60_000 });
    const lastSecond = Math.floor((Math.max(...ranAt) - startedAt) / 1_000);
    console.log(`# ${jobs} jobs at 2 a second ran within ${lastSecond + 1} s`);
    assert.ok(lastSecond * 1_000 > TIMEOUT_MS, 'the jobs should have outlasted one timeout');
    // all of them ran, 2 a second: the refiller kept its leadership and refilled every window
    assert.ok(lastSecond <= jobs / 2 + 2, `the last job ran in second ${lastSecond}`);
  });

  it('lets a job run past the timeout on quorum and classic queues: once on 4.x, again and again on 3.10 (README, "Job timeouts")', async () => {
    const broker = await brokerUnderTest(node.url);
    const namespace = testNamespace('clong');
    const runs = { quorum: 0, classic: 0 };
    const completed = { quorum: 0, classic: 0 };
    const jobMs = TIMEOUT_MS + 2_000;
    const longJob = (type: 'quorum' | 'classic') => {
      @Job(`long.${type}`, { queue: `long-${type}`, timeoutMs: 60_000, attempts: 1 })
      class LongJob implements JobHandler<object> {
        async handle() {
          runs[type] += 1;
          await sleep(jobMs);
          completed[type] += 1;
        }
      }
      return LongJob;
    };
    const [LongQuorum, LongClassic] = [longJob('quorum'), longJob('classic')];
    const { logger, entries } = createRecordingLogger('warn');
    const warren = await privateWarren(node.url, {
      namespace,
      logger,
      topology: defineTopology({
        queues: { 'long-quorum': { type: 'quorum' }, 'long-classic': { type: 'classic' } },
      }),
      handlers: [new LongQuorum(), new LongClassic()],
    });
    await warren.publish(LongQuorum, {});
    await warren.publish(LongClassic, {});
    await warren.start();
    if (broker.isV4) {
      // x-consumer-timeout on the quorum consumer (the job's timeout and a minute); classic: no timeout
      await waitFor(() => completed.quorum === 1 && completed.classic === 1, { what: 'both jobs' });
      await sleep(TIMEOUT_MS);
      assert.deepEqual(runs, { quorum: 1, classic: 1 });
    } else {
      // 3.10 ignores x-consumer-timeout: it closes the channel, requeues the job, and warren says why
      await waitFor(() => runs.quorum >= 2 && runs.classic >= 2, { what: 'both jobs to run again' });
      assert.ok(
        entries.some((entry) => /longer than its consumer_timeout/.test(String(entry.msg))),
        'the consumer-timeout line',
      );
    }
  });
});
