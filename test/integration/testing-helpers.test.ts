import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, type JobContext, type JobHandler } from '../../src';
import { createTestHarness, recordJobEvents, type TestHarness } from '../../src/testing';
import { BROKER_URL, rawConnection } from '../support/test-broker';
import { planOf } from '../../src/warren';

const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: { email: { bind: { exchange: 'jobs', pattern: 'email.*' } } },
});

type Jobs = { 'email.welcome': { userId: string }; 'email.broken': { userId: string } };

@Job('email.welcome', { queue: 'email', attempts: 1 })
class WelcomeEmail implements JobHandler<{ userId: string }> {
  readonly sentTo: string[] = [];
  async handle(data: { userId: string }, ctx: JobContext) {
    this.sentTo.push(data.userId);
    return `sent ${ctx.jobId}`;
  }
}

@Job('email.broken', { queue: 'email', attempts: 2, backoff: { type: 'fixed', delayMs: 100 } })
class BrokenEmail implements JobHandler<{ userId: string }> {
  async handle() {
    throw new Error('SMTP said no');
  }
}

describe('the test harness on a real broker', () => {
  let harness: TestHarness<Jobs> | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it('waits until the job completed and hands back its result', async () => {
    const welcome = new WelcomeEmail();
    harness = await createTestHarness<Jobs>({
      url: BROKER_URL,
      topology,
      handlers: [welcome, new BrokenEmail()],
    });
    assert.match(harness.namespace, /^test-warren-[0-9a-f]{8}$/);
    await harness.warren.publish('email.welcome', { userId: 'u1' }, { jobId: 'welcome-u1' });
    const completed = await harness.waitForCompleted('email.welcome', { jobId: 'welcome-u1' });
    assert.equal(completed.result, 'sent welcome-u1');
    assert.equal(completed.attempt, 1);
    assert.deepEqual(welcome.sentTo, ['u1']);
  });

  it('waits until the job is dead-lettered, through its retries, and reports the reason', async () => {
    harness = await createTestHarness<Jobs>({ url: BROKER_URL, topology, handlers: [new BrokenEmail()] });
    await harness.warren.publish('email.broken', { userId: 'u2' }, { jobId: 'broken-u2' });
    const dead = await harness.waitForDeadLettered('email.broken', { jobId: 'broken-u2' });
    assert.equal(dead.reason, 'attempts-exhausted');
    assert.equal(dead.attempt, 2);
    assert.match((dead.error as Error).message, /SMTP said no/);
    // events that happened before the wait began still answer it
    const firstFailure = await harness.waitForFailed('email.broken', {
      jobId: 'broken-u2',
      where: (event) => event.attempt === 1,
    });
    assert.equal(firstFailure.willRetry, true);
  });

  it('fails a wait at its deadline and says what happened to the job instead', async () => {
    harness = await createTestHarness<Jobs>({
      url: BROKER_URL,
      topology,
      handlers: [new BrokenEmail()],
      jobs: [WelcomeEmail],
    });
    await harness.warren.publish('email.broken', { userId: 'u3' }, { jobId: 'broken-u3' });
    await harness.waitForDeadLettered('email.broken', { jobId: 'broken-u3' });
    await assert.rejects(
      harness.waitForCompleted('email.broken', { jobId: 'broken-u3', timeoutMs: 300 }),
      (error: Error) => {
        assert.match(
          error.message,
          /timed out after 300 ms waiting for job 'email\.broken' \(jobId 'broken-u3'\) to complete/,
        );
        assert.match(error.message, /failed \(broken-u3 attempt 1: Error: SMTP said no\)/);
        assert.match(error.message, /dead-lettered \(broken-u3 attempt 2, reason attempts-exhausted/);
        return true;
      },
    );
    await assert.rejects(
      harness.waitForCompleted('email.welcome', { timeoutMs: 100 }),
      /no event for it at all/,
    );
  });

  it('answers each wait with a different event, so two waits wait for two jobs', async () => {
    const welcome = new WelcomeEmail();
    harness = await createTestHarness<Jobs>({ url: BROKER_URL, topology, handlers: [welcome] });
    const second = recordJobEvents(harness.warren);
    await harness.warren.publish('email.welcome', { userId: 'a' });
    await harness.warren.publish('email.welcome', { userId: 'b' });
    const first = await second.waitForCompleted('email.welcome');
    const next = await second.waitForCompleted('email.welcome');
    assert.notEqual(first.jobId, next.jobId);
    second.stop();
  });

  it('deletes every queue and exchange it declared on close', async () => {
    harness = await createTestHarness<Jobs>({ url: BROKER_URL, topology, handlers: [new WelcomeEmail()] });
    await harness.warren.publish('email.welcome', { userId: 'u4' }, { jobId: 'w-4' });
    await harness.waitForCompleted('email.welcome', { jobId: 'w-4' });
    const plan = planOf(harness.warren);
    assert.ok(plan.queues.length > 2 && plan.exchanges.length > 2);
    await harness.close();
    await harness.close(); // idempotent
    harness = undefined;
    const connection = await rawConnection();
    try {
      for (const queue of plan.queues) {
        const channel = await connection.createChannel();
        channel.on('error', () => undefined);
        await assert.rejects(channel.checkQueue(queue.name), /NOT_FOUND/, `queue ${queue.name} is gone`);
      }
      for (const exchange of plan.exchanges) {
        const channel = await connection.createChannel();
        channel.on('error', () => undefined);
        await assert.rejects(
          channel.checkExchange(exchange.name),
          /NOT_FOUND/,
          `exchange ${exchange.name} is gone`,
        );
      }
    } finally {
      await connection.close();
    }
  });
});
