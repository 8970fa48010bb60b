import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DecodeError } from '../../../src';
import {
  decodeJob,
  deadLetterProperties,
  describeError,
  jobProperties,
  republishProperties,
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
