import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  defineTopology,
  Job,
  PublishError,
  UnknownJobError,
  type JobContext,
  type JobHandler,
} from '../../src';
import { cleanup, rawConnection, testWarren } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: { email: { bind: { exchange: 'jobs', pattern: 'email.*' } } },
});

type Welcome = { userId: string };

@Job('email.welcome', { queue: 'email', attempts: 1 })
class WelcomeEmail implements JobHandler<Welcome> {
  readonly calls: { data: Welcome; ctx: JobContext }[] = [];
  async handle(data: Welcome, ctx: JobContext) {
    this.calls.push({ data, ctx });
  }
}

@Job('email.broken', { queue: 'email', attempts: 1 })
class BrokenEmail implements JobHandler<{ n: number }> {
  async handle() {
    throw new Error('SMTP said no');
  }
}

describe('publishing and running jobs', () => {
  afterEach(cleanup);
  after(cleanup);

  it('runs the handler with the payload and a context naming the job', async () => {
    const handler = new WelcomeEmail();
    const warren = await testWarren<{ 'email.welcome': Welcome; 'email.broken': { n: number } }>({
      topology,
      handlers: [handler, new BrokenEmail()],
    });
    await warren.start();
    const published = await warren.publish('email.welcome', { userId: 'u1' }, { jobId: 'welcome-u1' });
    assert.equal(published.jobId, 'welcome-u1');
    await waitFor(() => handler.calls.length === 1, { what: 'the handler to run' });
    const { data, ctx } = handler.calls[0]!;
    assert.deepEqual(data, { userId: 'u1' });
    assert.equal(ctx.jobId, 'welcome-u1');
    assert.equal(ctx.name, 'email.welcome');
    assert.equal(ctx.attempt, 1);
    assert.equal(ctx.queue, 'email');
    assert.equal(ctx.signal.aborted, false);
  });

  it('publishes by handler class as well as by name', async () => {
    const handler = new WelcomeEmail();
    const warren = await testWarren({ topology, handlers: [handler] });
    await warren.start();
    await warren.publish(WelcomeEmail, { userId: 'u2' });
    await waitFor(() => handler.calls.length === 1);
    assert.equal(handler.calls[0]!.data.userId, 'u2');
  });

  it('dead-letters a job whose handler throws on its last attempt, with reason headers', async () => {
    const warren = await testWarren({ topology, handlers: [new BrokenEmail()] });
    await warren.start();
    const dead = nextEvent<{ jobId: string; reason: string }>(warren, 'deadLettered');
    await warren.publish('email.broken', { n: 1 }, { jobId: 'broken-1' });
    const event = await dead;
    assert.equal(event.jobId, 'broken-1');
    assert.equal(event.reason, 'attempts-exhausted');
    const letters = await warren.deadLetters.list('email');
    assert.equal(letters.length, 1);
    assert.equal(letters[0]!.reason, 'attempts-exhausted');
    assert.match(letters[0]!.lastError ?? '', /SMTP said no/);
    assert.equal(letters[0]!.headers['warren-queue'], 'email');
    assert.equal(typeof letters[0]!.deadAt, 'number');
    assert.deepEqual(letters[0]!.data, { n: 1 });
    // listing does not consume: the peeked letters return to the queue as the peek ends
    await waitFor(async () => (await warren.deadLetters.count('email')) === 1, {
      what: 'the dead letter to be back after the peek',
    });
    assert.equal((await warren.deadLetters.list('email')).length, 1);
  });

  it('dead-letters an undecodable body and an unknown job type at once, and keeps consuming', async () => {
    const handler = new WelcomeEmail();
    const warren = await testWarren({ topology, handlers: [handler] });
    await warren.start();
    const queue = planOf(warren).jobs.get('email.welcome')!.queueName;
    const connection = await rawConnection();
    const channel = await connection.createConfirmChannel();
    channel.sendToQueue(queue, Buffer.from('{not json'), {
      type: 'email.welcome',
      messageId: 'bad-json',
      contentType: 'application/json',
    });
    channel.sendToQueue(queue, Buffer.from('{}'), {
      type: 'email.nobody',
      messageId: 'no-handler',
      contentType: 'application/json',
    });
    channel.sendToQueue(queue, Buffer.from('{"userId":"after"}'), {
      type: 'email.welcome',
      messageId: 'good',
      contentType: 'application/json',
    });
    await channel.waitForConfirms();
    await connection.close();
    await waitFor(() => handler.calls.some((c) => c.data.userId === 'after'), { what: 'the good job' });
    const letters = await waitFor(async () => {
      const list = await warren.deadLetters.list('email');
      return list.length === 2 ? list : undefined;
    });
    const reasons = Object.fromEntries(letters.map((l) => [l.jobId, l.reason]));
    assert.deepEqual(reasons, { 'bad-json': 'undecodable', 'no-handler': 'unknown-job' });
  });

  it('rejects publishing an unknown job name with a typed error', async () => {
    const warren = await testWarren<{ 'email.welcome': Welcome }>({
      topology,
      handlers: [new WelcomeEmail()],
    });
    await assert.rejects(
      // @ts-expect-error 'email.nope' is not a job name of this warren: a compile error for TypeScript users
      warren.publish('email.nope', {}),
      (error: unknown) => error instanceof UnknownJobError && error.code === 'UNKNOWN_JOB',
    );
  });

  it('rejects a publish that no queue receives (mandatory) with PUBLISH_UNROUTABLE', async () => {
    const warren = await testWarren({
      topology: defineTopology({ queues: { lonely: {} } }),
      jobs: [LonelyJob],
    });
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    await channel.deleteQueue(planOf(warren).jobs.get('lonely.job')!.queueName);
    await connection.close();
    await assert.rejects(
      warren.publish(LonelyJob, {}),
      (error: unknown) => error instanceof PublishError && error.code === 'PUBLISH_UNROUTABLE',
    );
  });

  it('makes a wrong payload shape a compile error', async () => {
    const warren = await testWarren<{ 'email.welcome': Welcome }>({ topology, jobs: [WelcomeEmail] });
    // @ts-expect-error userId must be a string
    await warren.publish('email.welcome', { userId: 42 }).catch(() => undefined);
    // @ts-expect-error the class's handle() takes { userId: string }
    await warren.publish(WelcomeEmail, { user: 'x' }).catch(() => undefined);
  });
});

@Job('lonely.job', { queue: 'lonely' })
class LonelyJob implements JobHandler<object> {
  async handle() {}
}
