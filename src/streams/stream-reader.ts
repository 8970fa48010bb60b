import type * as amqp from 'amqplib';
import { ConnectionError } from '../core';
import { X_ARGS } from '../topology';
import { consumeNoWait } from './nowait-consume';
import { KEPT, PREFETCH_SET, type ReadChannel } from './read-channel';
import { offsetArgument, type ReadOptions, type StreamRecord, type StreamStart } from './read-options';
import { visitSafely } from './visit-safely';
import { whileStreamStarts } from './starting-stream';

export type { ReadOptions, StreamRecord, StreamStart } from './read-options';

const FIRST_RECORD_WAIT_FACTOR = 5;
const FIRST_RECORD_MIN_WAIT_MS = 1000;
/**
 * A read whose consume-ok has not come this long after it asked fails (ConnectionError, CONNECTION_LOST) instead of waiting on:
 * a loaded broker answers within seconds, and a channel that ended without a word must not hold the read, and
 * the process with its timer, for ever.
 */
export const CONSUME_OK_WAIT_MS = 30_000;

/**
 * Reads a stream from an offset without consuming anything: a stream consumer on its own channel with
 * prefetch and manual acks (acks only move credit; the records stay). A stream consumer is never told it
 * reached the end, so a read ends at `max`, at `until`, when `visit` returns false, or when nothing
 * arrived for `idleMs`. `visit` sees every record in offset order; the return value is how many it saw
 * and the last offset.
 */
export function readStream(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  from: StreamStart,
  options: ReadOptions,
  /** Returning false ends the read. */
  visit: (record: StreamRecord) => unknown,
): Promise<{ count: number; lastOffset: number | undefined }> {
  return whileStreamStarts(() => readOnce(openChannel, stream, from, options, visit));
}

// size-exception: one consumer's life; its ends (max, until, an end still being found, quiet) share its state.
async function readOnce(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  from: StreamStart,
  options: ReadOptions,
  visit: (record: StreamRecord) => unknown,
): Promise<{ count: number; lastOffset: number | undefined }> {
  const channel: ReadChannel = await openChannel();
  const release = channel[KEPT];
  // (a kept channel has its listener from openReadChannel: one a read would add up)
  if (release === undefined) channel.on('error', () => undefined);
  let unwatch: () => void = () => undefined;
  let count = 0;
  let lastOffset: number | undefined;
  try {
    if (channel[PREFETCH_SET] !== options.prefetch) {
      await channel.prefetch(options.prefetch, false);
      channel[PREFETCH_SET] = options.prefetch;
    }
    // size-exception: the consumer's callbacks and its timers close over one read's state.
    await new Promise<void>((resolve, reject) => {
      let done = false;
      let until = typeof options.until === 'number' ? options.until : undefined;
      const finish = () => {
        done = true;
        clearTimeout(timer);
        resolve();
      };
      const firstWaitMs =
        options.firstWaitMs ?? Math.max(FIRST_RECORD_MIN_WAIT_MS, options.idleMs * FIRST_RECORD_WAIT_FACTOR);
      // A timer that fires while records wait in the socket (the event loop was busy) must not end the
      // read: it looks once more after the pending I/O ran. Nor before the consume-ok (a loaded broker's
      // round trip alone can outlast a first wait): that one waits again (the heartbeat bounds a dead broker).
      let arrivals = 0;
      let consuming = release !== undefined; // a kept channel's consume has no consume-ok
      let barrierPassed = options.quietAfterBarrier !== true;
      const askedAt = Date.now();
      const quietAfter = (ms: number): NodeJS.Timeout => {
        const seen = arrivals;
        const look = () => {
          if (arrivals !== seen) return;
          if (consuming && barrierPassed) finish();
          else if (!consuming && Date.now() - askedAt >= CONSUME_OK_WAIT_MS)
            failed(
              new ConnectionError(
                'CONNECTION_LOST',
                `no consume-ok from the broker in ${CONSUME_OK_WAIT_MS} ms reading ${stream}: the broker did not answer`,
              ),
            );
          else timer = quietAfter(ms);
        };
        return setTimeout(() => setImmediate(look), ms);
      };
      let timer = quietAfter(firstWaitMs);
      if (options.until instanceof Promise)
        options.until.then(
          (end) => {
            if (done) return;
            if (end === undefined) return count === 0 ? finish() : undefined; // else "empty" was wrong
            until = end;
            if ((lastOffset !== undefined && lastOffset >= end) || (typeof from === 'number' && from > end))
              finish();
          },
          (error: unknown) => {
            done = true;
            clearTimeout(timer);
            reject(error);
          },
        );
      const ackEvery = Math.max(1, Math.floor(options.prefetch / 2));
      let unacked = 0;
      const failed = (error: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(error);
      };
      const onMessage = (message: amqp.ConsumeMessage | null) => {
        if (message === null || done) return;
        arrivals += 1;
        clearTimeout(timer);
        const offset = Number(message.properties.headers?.[X_ARGS.streamOffset]);
        unacked += 1;
        const ack = () => {
          if (unacked < ackEvery) return;
          channel.ack(message, true);
          unacked = 0;
        };
        if (release === undefined) ack();
        // A read at an offset inside a chunk may get the chunk's earlier records first.
        if (typeof from === 'number' && offset < from) {
          if (release !== undefined) ack();
          timer = quietAfter(count === 0 ? firstWaitMs : options.idleMs);
          return;
        }
        if (until !== undefined && offset > until) return finish();
        const record = { offset, content: message.content, properties: message.properties };
        const lastOne = offset === until || count + 1 >= options.max;
        if (lastOne) release?.();
        const more = visitSafely(visit, record);
        count += 1;
        lastOffset = offset;
        if (more === false || lastOne) return finish();
        if (release !== undefined) ack();
        timer = quietAfter(options.idleMs);
      };
      const args = { [X_ARGS.streamOffset]: offsetArgument(from) };
      // A channel that closes mid-read (the broker refused, the connection went) ends the read with why, on
      // either path: a consume the channel took down with it may never settle.
      let closedWith: unknown;
      const onError = (error: unknown) => {
        closedWith = error;
      };
      const onClose = () =>
        failed(
          closedWith ??
            new ConnectionError(
              'CONNECTION_LOST',
              `the channel closed reading ${stream} (its connection closed)`,
            ),
        );
      channel.on('error', onError);
      channel.once('close', onClose);
      // The broker answers a basic.qos sent after the consume once it has sent every record it read for
      // that consume (the whole last chunk, for a read at `last`): a pause of its in the middle of them
      // does not end the read. A refusal closes the channel, which ends the read.
      const raiseBarrier = () => {
        if (!barrierPassed)
          channel.prefetch(options.prefetch, false).then(
            () => (barrierPassed = true),
            () => undefined,
          );
      };
      unwatch = () => {
        channel.off('error', onError);
        channel.off('close', onClose);
      };
      // On a kept channel the consumer joins without waiting for its consume-ok (nowait-consume.ts); a
      // refusal closes the channel, which ends the read with the broker's error.
      if (release !== undefined) {
        try {
          if (consumeNoWait(channel, stream, onMessage, args)) return raiseBarrier();
        } catch (error) {
          return failed(error);
        }
      }
      channel.consume(stream, onMessage, { noAck: false, arguments: args }).then(() => {
        consuming = true;
        raiseBarrier();
        if (done || arrivals > 0) return;
        clearTimeout(timer); // the first wait counts from here
        timer = quietAfter(firstWaitMs);
      }, failed);
    });
  } finally {
    // Closing the channel cancels the consumer; nothing read is lost, since a stream keeps its records.
    // Not awaited: the broker answers the close once the records it pushed ahead are dropped (10-50 ms),
    // and the read's answer does not depend on it. A kept channel's owner closes it.
    unwatch();
    if (release !== undefined) release();
    else channel.close().catch(() => undefined);
  }
  return { count, lastOffset };
}
