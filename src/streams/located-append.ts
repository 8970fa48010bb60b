import type * as amqp from 'amqplib';
import { X_ARGS } from '../topology';
import { rejectWhenStalled } from './stall-timer';
import { whileStreamStarts } from './starting-stream';

/** No record of the append delivered for this long (after its confirms) means it is not coming, ms. */
const LOCATE_STALL_MS = 5000;

/**
 * Appends records to a stream and learns the offset each got: AMQP 0-9-1 never tells a publisher where its
 * message landed, so a reader attached at `next` (after the stream's end) before the first publish sees
 * them come back with their offsets, beside whatever others append meanwhile. `append` publishes them
 * (confirmed); `which` says which delivered record is the i-th of this append (undefined: someone else's).
 * Resolves with the offsets in the append's order once every one was seen; rejects when `append` fails or
 * they do not all come back.
 */
export function appendAndLocate(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  count: number,
  append: () => Promise<void>,
  which: (properties: amqp.MessageProperties) => number | undefined,
): Promise<number[]> {
  // a refusal of a stream still starting answers the consume, before anything was appended
  return whileStreamStarts(() => locate(openChannel, stream, count, append, which));
}

async function locate(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  count: number,
  append: () => Promise<void>,
  which: (properties: amqp.MessageProperties) => number | undefined,
): Promise<number[]> {
  const channel = await openChannel();
  channel.on('error', () => undefined);
  const offsets: number[] = new Array<number>(count);
  let seen = 0;
  try {
    const prefetch = Math.min(1000, Math.max(10, count * 2));
    await channel.prefetch(prefetch, false);
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => {
      done = resolve;
      if (count === 0) resolve();
    });
    let arrivals = 0;
    await channel.consume(
      stream,
      (message) => {
        if (message === null) return;
        arrivals += 1;
        channel.ack(message);
        const i = which(message.properties);
        if (i === undefined || i < 0 || i >= count || offsets[i] !== undefined) return;
        offsets[i] = Number(message.properties.headers?.[X_ARGS.streamOffset]);
        seen += 1;
        if (seen === count) done();
      },
      { noAck: false, arguments: { [X_ARGS.streamOffset]: 'next' } },
    );
    await append();
    const stall = rejectWhenStalled(
      () => arrivals,
      LOCATE_STALL_MS,
      () => new Error(`${count - seen} of ${count} records appended to ${stream} not seen again`),
    );
    try {
      await Promise.race([all, stall.stalled]);
    } finally {
      stall.cancel();
    }
    return offsets;
  } finally {
    channel.close().catch(() => undefined);
  }
}
