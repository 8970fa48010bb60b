import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as amqp from 'amqplib';
import { defineTopology, Job, PublishError, type JobHandler, type Warren } from '../../src';
import { createRecordingLogger } from '../../src/testing';
import { createBrokerUser, deleteBrokerUser, type BrokerUser } from '../support/broker-user';
import { cleanup, rawConnection, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

/**
 * Messages other clients put straight into warren's queues (issue 12): each defect seen with them,
 * against the real broker. The fuzz test (bad-input.test.ts) mixes them all.
 */
const topology = defineTopology({ queues: { front: {}, back: {} } });
const runs = new Map<string, number[]>();
const ran = (id: string, attempt: number) => runs.set(id, [...(runs.get(id) ?? []), attempt]);

/** Fails its first attempt, then succeeds. */
@Job('front.flaky', { queue: 'front', attempts: 3, backoff: { type: 'fixed', delayMs: 100 } })
class FrontFlaky implements JobHandler<{ id: string }> {
  async handle(data: { id: string }, ctx: { attempt: number }) {
    ran(data.id, ctx.attempt);
    if (ctx.attempt === 1) throw new Error('first attempt fails');
  }
}

/** Always fails. */
@Job('front.fail', { queue: 'front', attempts: 2, backoff: { type: 'fixed', delayMs: 100 } })
class FrontFail implements JobHandler<{ id: string }> {
  async handle(data: { id: string }, ctx: { attempt: number }) {
    ran(data.id, ctx.attempt);
    throw new Error('always fails');
  }
}

@Job('back.job', { queue: 'back' })
class BackJob implements JobHandler<{ id: string }> {
  async handle(data: { id: string }, ctx: { attempt: number }) {
    ran(data.id, ctx.attempt);
  }
}

const handlers = () => [new FrontFlaky(), new FrontFail(), new BackJob()];

function queueName(warren: Warren<object>, key: string): string {
  return planOf(warren).queues.find((q) => q.role === 'job' && q.key === key)!.name;
}

/** Publishes straight to a queue with plain amqplib, as a foreign client does; resolves on the confirm. */
async function sendRaw(
  connection: amqp.ChannelModel,
  queue: string,
  body: Buffer | object,
  options: amqp.Options.Publish,
): Promise<void> {
  const channel = await connection.createConfirmChannel();
  const content = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
  channel.sendToQueue(queue, content, { contentType: 'application/json', ...options });
  await channel.waitForConfirms();
  await channel.close();
}

async function deadReasons(warren: Warren<object>, queue: string): Promise<Map<string, string>> {
  const letters = await warren.deadLetters.list(queue, { limit: 100 });
  return new Map(letters.map((l) => [l.jobId ?? '', l.reason]));
}

describe('hostile and foreign messages', () => {
  let other: BrokerUser | undefined;
  before(async () => {
    other = await createBrokerUser('hostile');
  });
  after(() => deleteBrokerUser(other));
  afterEach(cleanup);

  it("retries another broker user's message without its user_id, and nothing else slows down", async () => {
    const { logger, entries } = createRecordingLogger('warn');
    const warren = await testWarren({ topology, handlers: handlers(), logger });
    await warren.start();
    const foreign = await amqp.connect(other!.url);
    try {
      await sendRaw(
        foreign,
        queueName(warren, 'front'),
        { id: 'uid-1' },
        {
          type: 'front.flaky',
          messageId: 'uid-1',
          userId: other!.name,
        },
      );
    } finally {
      await foreign.close();
    }
    const started = Date.now();
    const unrelated = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const t = Date.now();
        await warren.publish('back.job', { id: `unrelated-${i}` });
        return Date.now() - t;
      }),
    );
    await waitFor(() => runs.get('uid-1')?.length === 2, { timeoutMs: 10_000, what: 'the retry to run' });
    assert.deepEqual(runs.get('uid-1'), [1, 2]);
    assert.ok(Math.max(...unrelated) < 1_000, `unrelated publishes took up to ${Math.max(...unrelated)} ms`);
    const closes = entries.filter((e) => e.msg === 'channel error');
    assert.deepEqual(closes, [], 'no channel was closed by the broker');
    assert.ok(Date.now() - started < 10_000);
  });

  it('dead-letters a job put into a queue it does not belong to as wrong-queue', async () => {
    const warren = await testWarren({ topology, handlers: handlers() });
    await warren.start();
    const raw = await rawConnection();
    await sendRaw(raw, queueName(warren, 'front'), { id: 'wq-1' }, { type: 'back.job', messageId: 'wq-1' });
    await raw.close();
    await waitFor(() => warren.deadLetters.count('front'), { what: 'the dead letter' });
    assert.equal((await deadReasons(warren, 'front')).get('wq-1'), 'wrong-queue');
    assert.equal(runs.get('wq-1'), undefined, "back.job's handler never ran from queue front");
  });

  it('ends a dead-letter replay whose letters die again at once', async () => {
    const warren = await testWarren({ topology, handlers: handlers() });
    await warren.start();
    const raw = await rawConnection();
    for (const id of ['rp-1', 'rp-2'])
      await sendRaw(raw, queueName(warren, 'front'), Buffer.from('not json'), {
        type: 'front.flaky',
        messageId: id,
      });
    await raw.close();
    await waitFor(async () => (await warren.deadLetters.count('front')) === 2, { what: 'two dead letters' });
    const bounded = <T>(work: Promise<T>) =>
      Promise.race([
        work,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('replay did not end')), 10_000)),
      ]);
    assert.equal(await bounded(warren.deadLetters.replay('front', { jobId: 'rp-1' })), 1);
    await waitFor(async () => (await warren.deadLetters.count('front')) === 2, {
      what: 'rp-1 back in dead letters',
    });
    assert.equal(await bounded(warren.deadLetters.replay('front')), 2);
    await waitFor(async () => (await warren.deadLetters.count('front')) === 2, {
      what: 'both back in dead letters',
    });
  });

  it('logs and ignores an async event listener that rejects', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { logger, entries } = createRecordingLogger('error');
      const warren = await testWarren({ topology, handlers: handlers(), logger });
      warren.on('failed', async () => {
        throw new Error('listener bug');
      });
      await warren.start();
      await warren.publish('front.fail', { id: 'listener-1' }, { attempts: 1 });
      await waitFor(() => entries.some((e) => e.msg === 'an event listener rejected; ignored'), {
        what: 'the rejection to be logged',
      });
      await waitFor(async () => (await warren.deadLetters.count('front')) === 1, { what: 'the dead letter' });
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('dead-letters or clamps forged warren control headers', async () => {
    const warren = await testWarren({ topology, handlers: handlers() });
    await warren.start();
    const raw = await rawConnection();
    const front = queueName(warren, 'front');
    const forged: [string, Record<string, unknown>][] = [
      ['fh-attempt-0', { 'warren-attempt': 0 }],
      ['fh-attempt-99', { 'warren-attempt': 99 }],
      ['fh-max-99', { 'warren-max-attempts': 99 }],
      ['fh-deliver-5y', { 'warren-deliver-at': Date.now() + 5 * 365 * 86_400_000 }],
      ['fh-attempt-text', { 'warren-attempt': 'three' }],
    ];
    for (const [id, headers] of forged)
      await sendRaw(raw, front, { id }, { type: 'front.fail', messageId: id, headers });
    await raw.close();
    await waitFor(async () => (await warren.deadLetters.count('front')) === forged.length, {
      timeoutMs: 15_000,
      what: 'every forged message in dead letters',
    });
    const reasons = await deadReasons(warren, 'front');
    assert.equal(reasons.get('fh-attempt-0'), 'invalid-headers');
    assert.equal(reasons.get('fh-deliver-5y'), 'invalid-headers');
    assert.equal(reasons.get('fh-attempt-text'), 'invalid-headers');
    assert.equal(reasons.get('fh-attempt-99'), 'attempts-exhausted');
    assert.deepEqual(runs.get('fh-attempt-99'), [2], 'an attempt past the last one is clamped to it');
    assert.equal(reasons.get('fh-max-99'), 'attempts-exhausted');
    assert.deepEqual(runs.get('fh-max-99'), [1, 2], "max-attempts cannot raise the job's own attempts");
  });

  it('bounds body sizes: publish refuses, the worker dead-letters as too-large without parsing', async () => {
    const warren = await testWarren({
      topology,
      handlers: handlers(),
      publisher: { maxBodyBytes: 1024 },
      worker: { maxBodyBytes: 1024 },
    });
    await warren.start();
    const big = { id: 'big-1', pad: 'x'.repeat(2000) };
    await assert.rejects(warren.publish('back.job', big), { code: 'PUBLISH_TOO_LARGE' });
    const raw = await rawConnection();
    await sendRaw(raw, queueName(warren, 'back'), big, { type: 'back.job', messageId: 'big-1' });
    await raw.close();
    await waitFor(() => warren.deadLetters.count('back'), { what: 'the dead letter' });
    assert.equal((await deadReasons(warren, 'back')).get('big-1'), 'too-large');
    assert.equal(runs.get('big-1'), undefined);
  });

  it('dead-letters a body that is not UTF-8; a payload too deep for JSON fails with a WarrenError', async () => {
    const warren = await testWarren({ topology, handlers: handlers() });
    await warren.start();
    const raw = await rawConnection();
    const body = Buffer.concat([Buffer.from('{"id":"utf-'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    await sendRaw(raw, queueName(warren, 'back'), body, { type: 'back.job', messageId: 'utf-1' });
    await raw.close();
    await waitFor(() => warren.deadLetters.count('back'), { what: 'the dead letter' });
    assert.equal((await deadReasons(warren, 'back')).get('utf-1'), 'undecodable');
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    await assert.rejects(
      warren.publish('back.job', { id: 'deep', deep } as never),
      (error: unknown) => error instanceof PublishError && error.code === 'PUBLISH_UNENCODABLE',
    );
  });
});
