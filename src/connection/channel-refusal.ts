import type * as amqp from 'amqplib';
import { PublishError, type Logger } from '../core';
import { isAmqpReply, missingExchangeOf, refusalDetailsOf } from './amqp-reply';
import type { PendingMessages } from './pending-messages';
import type { Pending } from './pending-publish';

/**
 * The broker closes a channel because of one message it refuses (RabbitMQ 3.10):
 * - 406 `PRECONDITION_FAILED - user_id property set to 'bob' but authenticated user was 'guest'`
 * - 406 `PRECONDITION_FAILED - message size 5000 is larger than configured max size 4096`
 * - 403 `ACCESS_REFUSED - write access to exchange 'x' in vhost '/' refused for user 'guest'`
 * Every message in flight on that channel is lost with it, the innocent ones included. These
 * helpers tell such a close from the others (connection loss, a consumer timeout, a missing exchange:
 * 404, handled on its own) and, where the broker's text says so, which message it was.
 */
export function isRefusalClose(error: Error | undefined): error is Error {
  return isAmqpReply(error, 'PRECONDITION_FAILED') || isAmqpReply(error, 'ACCESS_REFUSED');
}

interface Candidate {
  readonly exchange: string;
  readonly content: Buffer;
  readonly properties: amqp.Options.Publish;
}

/** True when the broker's close text names this message (its `user_id`, body size or exchange). */
export function namesMessage(error: Error, message: Candidate): boolean {
  const details = refusalDetailsOf(error);
  if (details.exchange !== undefined) return (message.exchange || 'amq.default') === details.exchange;
  if (details.userId !== undefined) return message.properties.userId === details.userId;
  if (details.messageBytes !== undefined) return message.content.length === details.messageBytes;
  return false;
}

/** The broker's `max_message_size`, when its close text gives it. */
export function brokerMaxMessageBytes(error: Error): number | undefined {
  return refusalDetailsOf(error).maxMessageBytes;
}

/**
 * After the broker closed channel `generation` refusing a message (406, 403): the message it names,
 * or the one that was alone in flight, fails with PUBLISH_REFUSED; every other message lost with
 * the channel is sent again, and if it is lost that way once more it goes out alone. So no frame
 * is sent again and again, and one bad message cannot hold up the others. Returns the broker's
 * `max_message_size` when its text gives it.
 */
export function blameRefusal(
  pending: PendingMessages,
  refusal: Error,
  generation: number,
  isolated: Pending | undefined,
  log: Logger,
): number | undefined {
  const lost = pending.lostWith(generation);
  const culprits = lost.filter((p) => p === isolated || namesMessage(refusal, p.message));
  const brokerMax = brokerMaxMessageBytes(refusal);
  for (const culprit of culprits) {
    log.warn(
      { ...culprit.message.context, reason: refusal.message },
      'the broker closed the publish channel because of this message; it fails alone',
    );
    const tooLarge = brokerMax !== undefined && culprit.message.content.length > brokerMax;
    pending.fail(
      culprit,
      new PublishError(
        tooLarge ? 'PUBLISH_TOO_LARGE' : 'PUBLISH_REFUSED',
        `the broker refused the message and closed the channel: ${refusal.message}`,
        { ...culprit.message.context, cause: refusal },
      ),
    );
  }
  for (const other of lost) {
    if (other.settled) continue;
    other.refusals += 1;
    // Nobody named: each goes out alone until the culprit is found. Named: the rest go out again
    // as before, once; should one be lost that way again, then alone.
    other.mustGoAlone = culprits.length === 0 || other.refusals > 1;
  }
  pending.dropSettled();
  return brokerMax;
}

/**
 * A publish to an exchange that does not exist closes the channel (404). Re-sending would close it
 * again until the deadline, so the messages for that exchange fail now, with the broker's reason.
 */
export function failMissingExchange(pending: PendingMessages, error: Error | undefined): void {
  const missing = missingExchangeOf(error);
  if (missing === undefined) return;
  for (const message of pending.unconfirmed()) {
    if (message.message.exchange === missing) {
      pending.fail(
        message,
        new PublishError('PUBLISH_UNROUTABLE', `exchange '${missing}' does not exist on the broker`, {
          ...message.message.context,
          cause: error,
        }),
      );
    }
  }
  pending.dropSettled();
}
