import { randomBytes } from 'node:crypto';
import type * as amqp from 'amqplib';

/** amqplib's id of basic.consume (class 60, method 20). */
const BASIC_CONSUME = (60 << 16) | 20;

/** What a consume without its reply needs of amqplib's channel (lib/channel.js). */
interface ConsumeInternals {
  sendImmediately(method: number, fields: object): unknown;
  registerConsumer(tag: string, callback: (message: amqp.ConsumeMessage | null) => void): void;
  /** The reply an RPC in flight waits for: a frame sent now would overtake it. */
  reply?: unknown;
}

/**
 * Starts a consumer with `nowait` (no basic.consume-ok), when amqplib's internals are what this expects and
 * no RPC is in flight on the channel; returns false otherwise (the caller consumes the usual way). amqplib
 * allows one RPC at a time on a channel, so a consumer joining a channel another read's consumer is on
 * waits for that one's consume-ok, which RabbitMQ 4.x sends after the consumer's first records, often
 * 5–10 ms later (issue 33): a lookup's next read would wait for it. A broker refusal (an unknown stream)
 * closes the channel: the caller watches for that.
 */
export function consumeNoWait(
  channel: amqp.Channel,
  queue: string,
  callback: (message: amqp.ConsumeMessage | null) => void,
  args: Record<string, unknown>,
  /** Consume without acks (RabbitMQ's direct reply-to takes no other consumer). */
  noAck = false,
): boolean {
  const internals = channel as unknown as Partial<ConsumeInternals>;
  if (
    typeof internals.sendImmediately !== 'function' ||
    typeof internals.registerConsumer !== 'function' ||
    internals.reply
  )
    return false;
  const consumerTag = `warren.read.${randomBytes(6).toString('hex')}`;
  internals.registerConsumer(consumerTag, callback);
  internals.sendImmediately(BASIC_CONSUME, {
    ticket: 0,
    queue,
    consumerTag,
    noLocal: false,
    noAck,
    exclusive: false,
    nowait: true,
    arguments: args,
  });
  return true;
}
