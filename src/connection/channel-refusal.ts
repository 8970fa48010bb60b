import type * as amqp from 'amqplib';
import { isAmqpReply, refusalDetailsOf } from './amqp-reply';

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
