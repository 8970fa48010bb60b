import type * as amqp from 'amqplib';
import { X_ARGS } from '../topology';
import type { StreamRecord } from './stream-reader';
import { whileStreamStarts } from './starting-stream';
import { visitSafely } from './visit-safely';
import { closeChannel } from '../core';

/** A consumer that stays on a stream and hands every new record to `visit`. */
export interface StreamFollower {
  /** True once its channel closed (a lost connection): whoever relies on it must read again. */
  readonly isClosed: boolean;
  /**
   * Records the broker delivered so far, those before `from` included. None at all while the follower's
   * own record is on the stream means the stream ends before `from`: RabbitMQ waits for that offset.
   */
  readonly delivered: number;
  close(): Promise<void>;
}

const PREFETCH = 2000;

/**
 * Follows a stream from an offset: what an index keeps open so that a warm query needs no read at all.
 * Acks (credit only) every half prefetch.
 */
export function followStream(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  from: number,
  visit: (record: StreamRecord) => void,
): Promise<StreamFollower> {
  return whileStreamStarts(() => follow(openChannel, stream, from, visit));
}

async function follow(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  from: number,
  visit: (record: StreamRecord) => void,
): Promise<StreamFollower> {
  const channel = await openChannel();
  let isClosed = false;
  channel.on('error', () => undefined);
  channel.on('close', () => {
    isClosed = true;
  });
  await channel.prefetch(PREFETCH, false);
  let unacked = 0;
  let delivered = 0;
  await channel.consume(
    stream,
    (message) => {
      if (message === null) {
        isClosed = true;
        return;
      }
      unacked += 1;
      if (unacked >= PREFETCH / 2) {
        channel.ack(message, true);
        unacked = 0;
      }
      const offset = Number(message.properties.headers?.[X_ARGS.streamOffset]);
      delivered += 1;
      if (offset >= from)
        visitSafely(visit, { offset, content: message.content, properties: message.properties });
    },
    { noAck: false, arguments: { [X_ARGS.streamOffset]: from } },
  );
  return {
    get isClosed() {
      return isClosed;
    },
    get delivered() {
      return delivered;
    },
    close: async () => {
      isClosed = true;
      await closeChannel(channel);
    },
  };
}
