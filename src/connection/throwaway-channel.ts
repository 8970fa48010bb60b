import type * as amqp from 'amqplib';
import { isAmqpReply } from './amqp-reply';
import { closeChannel } from '../core';

/** Opens a plain channel: `() => manager.openChannel()`. */
export type OpenChannel = () => Promise<amqp.Channel>;

/**
 * Opens a channel for one piece of work and closes it after, whatever happened. A broker error closes the
 * channel it happens on (a passive declare of a missing queue: 404), so such work gets a channel of its own;
 * the channel's `error` event is swallowed because the work's own promise carries the broker's reason.
 */
export async function withThrowawayChannel<T>(
  open: OpenChannel,
  work: (channel: amqp.Channel) => Promise<T>,
  /**
   * False answers as soon as the work is done and lets the close finish behind: a close is a round trip
   * (2–6 ms) that a lookup on the request path need not wait for.
   */
  waitForClose = true,
): Promise<T> {
  const channel = await open();
  // A channel error without a listener crashes the process.
  channel.on('error', () => undefined);
  try {
    return await work(channel);
  } finally {
    const closed = closeChannel(channel);
    if (waitForClose) await closed;
  }
}

/** A passive declare: the queue's counts, or undefined when the broker says it does not exist (404). */
export function checkQueueIfExists(
  open: OpenChannel,
  queue: string,
): Promise<amqp.Replies.AssertQueue | undefined> {
  return withThrowawayChannel(open, (channel) =>
    channel.checkQueue(queue).catch((error: unknown) => {
      if (isAmqpReply(error, 'NOT_FOUND')) return undefined;
      throw error;
    }),
  );
}

/** A passive declare of an exchange: false when the broker says it does not exist (404). */
export function exchangeExists(open: OpenChannel, exchange: string): Promise<boolean> {
  return withThrowawayChannel(open, (channel) =>
    channel.checkExchange(exchange).then(
      () => true,
      (error: unknown) => {
        if (isAmqpReply(error, 'NOT_FOUND')) return false;
        throw error;
      },
    ),
  );
}
