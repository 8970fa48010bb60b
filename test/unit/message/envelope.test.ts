import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DecodeError } from '../../../src';
import {
  decodeJob,
  deadLetterProperties,
  describeError,
  jobProperties,
  republishProperties,
  resultAddressOf,
} from '../../../src/message';

const now = 1_700_000_000_000;

describe('the wire format', () => {
  it('encodes a job as persistent, mandatory JSON with type, message id and warren headers', () => {
    const props = jobProperties({
      name: 'email.welcome',
      jobId: 'j1',
      body: Buffer.alloc(0),
      attempt: 1,
      enqueuedAt: now,
      priority: 3,
    });
    assert.equal(props.contentType, 'application/json');
    assert.equal(props.type, 'email.welcome');
    assert.equal(props.messageId, 'j1');
    assert.equal(props.persistent, true);
    assert.equal(props.mandatory, true);
    assert.equal(props.timestamp, Math.floor(now / 1000));
    assert.equal(props.priority, 3);
    assert.deepEqual(props.headers, { 'warren-attempt': 1, 'warren-enqueued-at': now });
  });

  it('decodes what a foreign publisher sends, tolerating odd header types', () => {
    const job = decodeJob(
      {
        content: Buffer.from('{"a":1}'),
        properties: {
          type: 'x.y',
          messageId: 'm',
          headers: { 'warren-attempt': '2', 'warren-enqueued-at': 'soon' },
          timestamp: 10,
        } as never,
      },
      now,
    );
    assert.equal(job.attempt, 2);
    assert.equal(job.enqueuedAt, 10_000);
    assert.deepEqual(job.data, { a: 1 });
  });

  it('refuses a body that is not JSON, a missing type and a foreign content type', () => {
    const props = { type: 'x.y', headers: {} };
    assert.throws(
      () => decodeJob({ content: Buffer.from('nope'), properties: props as never }, now),
      DecodeError,
    );
    assert.throws(
      () => decodeJob({ content: Buffer.from('{}'), properties: { headers: {} } as never }, now),
      DecodeError,
    );
    assert.throws(
      () =>
        decodeJob(
          { content: Buffer.from('{}'), properties: { ...props, contentType: 'text/plain' } as never },
          now,
        ),
      DecodeError,
    );
  });

  it('strips the broker death headers on every republish', () => {
    const props = republishProperties(
      {
        headers: { 'x-death': [{}], 'x-first-death-queue': 'q', 'keep-me': 1 },
        type: 't',
        messageId: 'm',
      } as never,
      { 'warren-attempt': 2 },
    );
    assert.deepEqual(props.headers, { 'keep-me': 1, 'warren-attempt': 2 });
    assert.equal(props.messageId, 'm');
  });

  it('removes the headers the changes set to undefined and keeps any other, whatever its name', () => {
    const props = republishProperties(
      {
        headers: { 'warren-deliver-at': 5, 'warren-attempt': 1, toString: 'foreign', CC: ['q'] },
      } as never,
      { 'warren-deliver-at': undefined, 'warren-attempt': 2, constructor: undefined },
    );
    assert.deepEqual(props.headers, { toString: 'foreign', 'warren-attempt': 2 });
  });

  it('never republishes reply_to: a direct reply-to address moves to warren-reply-to, any other is dropped', () => {
    // RabbitMQ 3.10 closes the channel (406) of a publish whose reply_to is direct reply-to when that
    // channel does not consume it: a retry or dead letter keeping it would kill the worker's channel.
    const address = 'amq.rabbitmq.reply-to.g2dkAA1yYWJiaXRAbG9jYWxob3N0AAAA';
    const retried = republishProperties({ headers: {}, replyTo: address } as never, {});
    assert.equal(retried.replyTo, undefined);
    assert.equal(retried.headers?.['warren-reply-to'], address);
    assert.deepEqual(resultAddressOf({ headers: retried.headers } as never), address);
    for (const replyTo of ['amq.rabbitmq.reply-to', 'some-queue', 'amq.rabbitmq.reply-to.']) {
      const props = republishProperties({ headers: {}, replyTo } as never, {});
      assert.equal(props.replyTo, undefined, replyTo);
      assert.equal(props.headers?.['warren-reply-to'], undefined, replyTo);
    }
    const dead = deadLetterProperties({ headers: {}, replyTo: address } as never, {
      reason: 'attempts-exhausted',
      queue: 'q',
      deadAt: now,
    });
    assert.equal(dead.replyTo, undefined);
  });

  it('answers only direct reply-to addresses, from reply_to or warren-reply-to', () => {
    const address = 'amq.rabbitmq.reply-to.abc123==';
    assert.equal(resultAddressOf({ replyTo: address, headers: {} } as never), address);
    assert.equal(resultAddressOf({ replyTo: 'orders', headers: {} } as never), undefined);
    assert.equal(resultAddressOf({ headers: { 'warren-reply-to': 'orders' } } as never), undefined);
    assert.equal(resultAddressOf({ headers: { 'warren-reply-to': 42 } } as never), undefined);
    assert.equal(resultAddressOf({ replyTo: 'amq.rabbitmq.reply-to', headers: {} } as never), undefined);
  });

  it('writes the reason, queue, time and a capped error into dead letters', () => {
    const error = new Error('x'.repeat(10_000));
    const props = deadLetterProperties({ headers: {} } as never, {
      reason: 'attempts-exhausted',
      error,
      queue: 'email',
      attempt: 3,
      deadAt: now,
    });
    assert.equal(props.headers!['warren-dead-reason'], 'attempts-exhausted');
    assert.equal(props.headers!['warren-queue'], 'email');
    assert.equal(props.headers!['warren-dead-at'], now);
    assert.ok((props.headers!['warren-last-error'] as string).length <= 4000);
    assert.match(describeError(new TypeError('boom')), /TypeError: boom/);
  });
});
