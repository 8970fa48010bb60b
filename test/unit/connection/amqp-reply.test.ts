import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  amqpReplyOf,
  isAmqpReply,
  isConsumerTimeout,
  isNack,
  isStreamStarting,
  missingExchangeOf,
  refusalDetailsOf,
} from '../../../src/connection/amqp-reply';

/** An error shaped like amqplib's channel-close error: the reply code on `code`, the reply text in the message. */
function closeError(code: number, text: string): Error {
  return Object.assign(new Error(`Channel closed by server: ${code} (${text})`), { code });
}

describe('amqpReplyOf', () => {
  it('names the reply code amqplib puts on a close', () => {
    const reply = amqpReplyOf(closeError(404, "NOT_FOUND - no queue 'q' in vhost '/'"));
    assert.equal(reply?.code, 404);
    assert.equal(reply?.kind, 'NOT_FOUND');
    assert.match(reply?.text ?? '', /no queue 'q'/);
  });

  it('gives nothing for an error without a reply code, and no kind for a code outside AMQP 0-9-1', () => {
    assert.equal(amqpReplyOf(new Error('socket hang up')), undefined);
    assert.equal(amqpReplyOf(undefined), undefined);
    assert.equal(amqpReplyOf(Object.assign(new Error('x'), { code: 'ECONNRESET' })), undefined);
    assert.equal(amqpReplyOf(closeError(999, 'odd'))?.kind, undefined);
  });

  it('tells a kind by its code, never by the text', () => {
    assert.equal(isAmqpReply(closeError(406, 'PRECONDITION_FAILED - x'), 'PRECONDITION_FAILED'), true);
    assert.equal(isAmqpReply(new Error('NOT_FOUND - 404'), 'NOT_FOUND'), false);
  });
});

describe("the broker's text, where the code does not say enough", () => {
  it('reads the missing exchange of a 404 only', () => {
    const text = "NOT_FOUND - no exchange 'app.gone' in vhost '/'";
    assert.equal(missingExchangeOf(closeError(404, text)), 'app.gone');
    assert.equal(missingExchangeOf(closeError(406, text)), undefined);
    assert.equal(missingExchangeOf(closeError(404, "NOT_FOUND - no queue 'q' in vhost '/'")), undefined);
  });

  it('reads what a refusal close says about the message it refused', () => {
    assert.deepEqual(
      refusalDetailsOf(
        closeError(406, 'PRECONDITION_FAILED - message size 5000 is larger than configured max size 4096'),
      ),
      { messageBytes: 5000, maxMessageBytes: 4096 },
    );
    assert.deepEqual(
      refusalDetailsOf(
        closeError(
          406,
          "PRECONDITION_FAILED - user_id property set to 'bob' but authenticated user was 'guest'",
        ),
      ),
      { userId: 'bob' },
    );
    assert.deepEqual(
      refusalDetailsOf(
        closeError(
          403,
          "ACCESS_REFUSED - write access to exchange 'x' in vhost '/' refused for user 'guest'",
        ),
      ),
      { exchange: 'x' },
    );
  });

  it("tells a consumer timeout and amqplib's nack", () => {
    assert.equal(
      isConsumerTimeout(
        closeError(406, 'PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out'),
      ),
      true,
    );
    assert.equal(isConsumerTimeout(closeError(406, 'PRECONDITION_FAILED - inequivalent arg')), false);
    assert.equal(isNack(new Error('message nacked')), true);
    assert.equal(isNack(closeError(406, 'x')), false);
    assert.equal(isNack(null), false);
  });

  it('tells the refusal of a consumer of a stream still starting (RabbitMQ 3.10, as seen)', () => {
    const starting = closeError(
      406,
      "PRECONDITION_FAILED - queue 'queue 'ns.warren.dead-log' in vhost '/'' does not have a replica on the local node",
    );
    assert.equal(isStreamStarting(starting), true);
    assert.equal(isStreamStarting(closeError(406, 'PRECONDITION_FAILED - inequivalent arg')), false);
    assert.equal(isStreamStarting(closeError(404, 'does not have a replica on the local node')), false);
    assert.equal(isStreamStarting(undefined), false);
  });
});
