import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as amqp from 'amqplib';
import { defineTopology, Job, PublishError, type JobHandler, type WarrenOptions } from '../../src';
import { createRecordingLogger } from '../../src/testing';
import {
  cleanConfiguredNode,
  rabbitCtl,
  startConfiguredNode,
  type PrivateNode,
} from '../support/private-broker';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { closePrivateWarrens, privateWarren } from './private-warren';
import { planOf } from '../../src/warren';

/** The `wsmall` node's max_message_size: small, so that a test can go over it cheaply. */
const MAX_MESSAGE_SIZE = 65_536;
const runs: number[] = [];

// An exponential backoff: its retries go through the delay levels, whose exchanges a permission can refuse
// (a fixed backoff's retry goes to its hold through the default exchange, which the jobs' publishes use too).
@Job('small.fail', { queue: 'small', attempts: 3, backoff: { type: 'exponential', delayMs: 100, jitter: 0 } })
class SmallFail implements JobHandler<{ pad: string }> {
  async handle(_data: { pad: string }, ctx: { attempt: number }) {
    runs.push(ctx.attempt);
    throw new Error('fails, so that the worker must republish it');
  }
}

@Job('small.ok', { queue: 'small' })
class SmallOk implements JobHandler<{ i: number }> {
  async handle() {}
}

const topology = defineTopology({ queues: { small: {} } });

/** Sets the broker's max_message_size for channels opened from now on. */
/**
 * Changes the broker's limit at run time. 3.10 reads the application environment for every publish; 4.3
 * reads a copy it keeps in a persistent term named `max_message_size` (found on 4.3.6), so both are set.
 */
async function setMaxMessageSize(node: PrivateNode, bytes: number): Promise<void> {
  await rabbitCtl(
    node.name,
    'eval',
    `application:set_env(rabbit, max_message_size, ${bytes}), persistent_term:put(max_message_size, ${bytes}).`,
  );
}

/**
 * A message the broker refuses closes the publisher's channel with every other publish in flight on
 * it (issue 12). The refused message must fail alone, the others be confirmed, and nothing be sent
 * again and again; a job the worker cannot republish any more ends in dead letters, once.
 */
describe(`messages over the broker's max_message_size (${MAX_MESSAGE_SIZE} bytes)`, {
  timeout: 240_000,
}, () => {
  let node: PrivateNode;
  before(async () => {
    node = await startConfiguredNode('wsmall', `max_message_size = ${MAX_MESSAGE_SIZE}\n`);
  });
  afterEach(closePrivateWarrens);
  after(() => cleanConfiguredNode('wsmall'));

  const options = (extra: Partial<WarrenOptions> = {}) => {
    const { logger, entries } = createRecordingLogger('warn');
    return {
      entries,
      options: {
        namespace: testNamespace('small'),
        topology,
        handlers: [new SmallFail(), new SmallOk()],
        logger,
        ...extra,
      },
    };
  };
  const channelCloses = (entries: { msg: string; channel?: unknown }[]) =>
    entries.filter((e) => e.msg === 'channel error' && e.channel === 'publisher').length;

  it('fails the one refused publish alone and confirms every other publish in flight with it', async () => {
    const { entries, options: o } = options({ publisher: { timeoutMs: 5_000 } });
    const warren = await privateWarren(node.url, o);
    const big = warren.publish('small.fail', { pad: 'x'.repeat(MAX_MESSAGE_SIZE) });
    const small = Array.from({ length: 200 }, (_, i) => warren.publish('small.ok', { i }));
    const started = Date.now();
    await assert.rejects(
      big,
      (error: unknown) => error instanceof PublishError && error.code === 'PUBLISH_TOO_LARGE',
    );
    await Promise.all(small);
    assert.ok(Date.now() - started < 3_000, `took ${Date.now() - started} ms`);
    assert.equal(channelCloses(entries), 1, 'the broker closed the channel once');
    // Learned: the next one fails before it is sent.
    await assert.rejects(warren.publish('small.fail', { pad: 'y'.repeat(MAX_MESSAGE_SIZE) }), {
      code: 'PUBLISH_TOO_LARGE',
    });
    assert.equal(channelCloses(entries), 1);
  });

  it('refuses a body over publisher.brokerMaxMessageBytes before sending it', async () => {
    const { entries, options: o } = options({ publisher: { brokerMaxMessageBytes: MAX_MESSAGE_SIZE } });
    const warren = await privateWarren(node.url, o);
    await assert.rejects(warren.publish('small.fail', { pad: 'x'.repeat(MAX_MESSAGE_SIZE) }), {
      code: 'PUBLISH_TOO_LARGE',
    });
    await warren.publish('small.ok', { i: 1 });
    assert.equal(channelCloses(entries), 0);
  });

  it('parks a job it cannot republish any more in dead letters, once, without a loop', async () => {
    const { entries, options: o } = options();
    const warren = await privateWarren(node.url, o);
    const queue = planOf(warren).queues.find((q) => q.role === 'job' && q.key === 'small')!.name;
    // The message got in while the broker's limit was higher (it was lowered since).
    await setMaxMessageSize(node, 4 * MAX_MESSAGE_SIZE);
    try {
      const raw = await amqp.connect(node.url);
      const channel = await raw.createConfirmChannel();
      const body = Buffer.from(JSON.stringify({ pad: 'z'.repeat(2 * MAX_MESSAGE_SIZE) }));
      channel.sendToQueue(queue, body, {
        type: 'small.fail',
        messageId: 'too-big-now',
        contentType: 'application/json',
      });
      await channel.waitForConfirms();
      await raw.close();
    } finally {
      await setMaxMessageSize(node, MAX_MESSAGE_SIZE);
    }
    await warren.start();
    await waitFor(async () => (await warren.deadLetters.count('small')) === 1, {
      timeoutMs: 45_000,
      what: 'the job in dead letters',
    });
    const [letter] = await warren.deadLetters.list('small');
    assert.equal(letter?.jobId, 'too-big-now');
    const log = JSON.stringify(entries.map((e) => e.msg));
    assert.deepEqual(runs, [1], `it ran once; its retry could not be sent (log: ${log})`);
    assert.equal(channelCloses(entries), 1, `the broker closed the channel once (log: ${log})`);
    // Listing peeks (the letter returns to the parking queue when the listing channel closes): still one.
    await waitFor(async () => (await warren.deadLetters.count('small')) === 1, { what: 'one dead letter' });
  });

  it('dead-letters a retry the broker refuses as unrepublishable, and the other publishes go through', async () => {
    const { entries, options: o } = options();
    const warren = await privateWarren(node.url, o);
    await warren.start();
    // From now on guest may not publish to the delay levels (a permission taken away at run time).
    await rabbitCtl(
      node.name,
      'set_permissions',
      '-p',
      '/',
      'guest',
      '.*',
      '^(?!.*warren\\.delay\\.).*',
      '.*',
    );
    try {
      await warren.publish('small.fail', { pad: 'refused' }, { jobId: 'refused-retry' });
      const others = Array.from({ length: 50 }, (_, i) => warren.publish('small.ok', { i }));
      await Promise.all(others);
      await waitFor(async () => (await warren.deadLetters.count('small')) === 1, {
        timeoutMs: 45_000,
        what: 'the job in dead letters',
      });
      const [letter] = await warren.deadLetters.list('small');
      assert.equal(letter?.jobId, 'refused-retry');
      assert.equal(letter?.reason, 'unrepublishable');
      assert.deepEqual(runs.slice(-1), [1], 'it ran once; its retry could not be sent');
      assert.ok(channelCloses(entries) <= 2, `the broker closed the channel ${channelCloses(entries)} times`);
    } finally {
      await rabbitCtl(node.name, 'set_permissions', '-p', '/', 'guest', '.*', '.*', '.*');
    }
  });
});
