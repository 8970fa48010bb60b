import type * as amqp from 'amqplib';
import { X_ARGS } from '../topology';

/** One record read from a stream, with its offset. */
export interface StreamRecord {
  readonly offset: number;
  readonly content: Buffer;
  readonly properties: amqp.MessageProperties;
}

export type StreamStart = number | 'first' | 'last';

export interface ReadOptions {
  /** Stop after this many records. */
  readonly max: number;
  /** Stop after the record at this offset (inclusive). */
  readonly until?: number;
  /** No record for this long means the end of the stream, ms. */
  readonly idleMs: number;
  /** Records in flight (basic.qos): bigger scans faster, a page needs no more than it shows. */
  readonly prefetch: number;
}

/**
 * Reads a stream from an offset without consuming anything: a stream consumer on its own channel with
 * prefetch and manual acks (acks only move credit; the records stay). A stream consumer is never told it
 * reached the end, so a read ends at `max`, at `until`, or when nothing arrived for `idleMs`. `visit`
 * sees every record in offset order; the return value is how many it saw and the last offset.
 */
export async function readStream(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  from: StreamStart,
  options: ReadOptions,
  visit: (record: StreamRecord) => void,
): Promise<{ count: number; lastOffset: number | undefined }> {
  const channel = await openChannel();
  channel.on('error', () => undefined);
  let count = 0;
  let lastOffset: number | undefined;
  try {
    await channel.prefetch(options.prefetch);
    await new Promise<void>((resolve, reject) => {
      let done = false;
      const finish = () => {
        done = true;
        clearTimeout(timer);
        resolve();
      };
      let timer = setTimeout(finish, options.idleMs);
      const ackEvery = Math.max(1, Math.floor(options.prefetch / 2));
      let unacked = 0;
      channel
        .consume(
          stream,
          (message) => {
            if (message === null || done) return;
            clearTimeout(timer);
            const offset = Number(message.properties.headers?.[X_ARGS.streamOffset]);
            unacked += 1;
            if (unacked >= ackEvery) {
              channel.ack(message, true);
              unacked = 0;
            }
            // A read at an offset inside a chunk may get the chunk's earlier records first.
            if (typeof from === 'number' && offset < from) {
              timer = setTimeout(finish, options.idleMs);
              return;
            }
            if (options.until !== undefined && offset > options.until) return finish();
            visit({ offset, content: message.content, properties: message.properties });
            count += 1;
            lastOffset = offset;
            if (count >= options.max || offset === options.until) return finish();
            timer = setTimeout(finish, options.idleMs);
          },
          { noAck: false, arguments: { [X_ARGS.streamOffset]: from } },
        )
        .catch(reject);
    });
  } finally {
    // Closing the channel cancels the consumer; nothing read is lost, since a stream keeps its records.
    await channel.close().catch(() => undefined);
  }
  return { count, lastOffset };
}
