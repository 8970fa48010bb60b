import type * as amqp from 'amqplib';
import { X_ARGS } from '../topology';
import { visitSafely, type StreamRecord } from './stream-reader';

/** Quiet this long after the consumer started or after the last record: the stream's end, ms. */
const NEWEST_IDLE_MS = 100;
/** A read of the last chunk never takes longer than this, ms (a flood appended meanwhile). */
const NEWEST_MAX_MS = 2000;

/**
 * The newest record of a stream's last chunk that `take` takes (a checkpoint): reads from `last` and keeps
 * the last one taken. An empty stream costs NEWEST_IDLE_MS. Only a hint: a reader that gets undefined
 * (nothing taken, or the broker slow to deliver) reads the stream it is about from the start, never less.
 */
export async function newestRecord<T>(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  take: (record: StreamRecord) => T | undefined,
): Promise<T | undefined> {
  const channel = await openChannel();
  channel.on('error', () => undefined);
  let newest: T | undefined;
  try {
    await channel.prefetch(100, false);
    await new Promise<void>((resolve, reject) => {
      let idle: NodeJS.Timeout | undefined;
      const finish = () => {
        clearTimeout(idle);
        clearTimeout(cap);
        resolve();
      };
      const cap = setTimeout(finish, NEWEST_MAX_MS);
      const quiet = () => {
        clearTimeout(idle);
        idle = setTimeout(finish, NEWEST_IDLE_MS);
      };
      channel
        .consume(
          stream,
          (message) => {
            if (message === null) return finish();
            channel.ack(message);
            const offset = Number(message.properties.headers?.[X_ARGS.streamOffset]);
            const taken = visitSafely(take, {
              offset,
              content: message.content,
              properties: message.properties,
            });
            if (taken !== undefined) newest = taken;
            quiet();
          },
          { noAck: false, arguments: { [X_ARGS.streamOffset]: 'last' } },
        )
        .then(quiet, reject);
    });
  } finally {
    await channel.close().catch(() => undefined);
  }
  return newest;
}
