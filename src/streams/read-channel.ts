import type * as amqp from 'amqplib';

/** The prefetch a channel opened by {@link openReadChannel} has set already. */
export const PREFETCH_SET = Symbol('warren.prefetchSet');
/**
 * On a channel kept for reads one after another (read-channels.ts): frees it for the next read. A read on
 * such a channel neither closes it nor acks the record that ends the read (its consumer keeps its credit,
 * so with a prefetch no larger than the read nothing more is sent), and frees it as that record arrives.
 */
export const KEPT = Symbol('warren.keptReadChannel');
export type ReadChannel = amqp.Channel & { [PREFETCH_SET]?: number; [KEPT]?: () => void };

/**
 * A channel opened ahead of a read, its prefetch set: a reader that knows it will read again once an answer
 * arrives (a lookup: its index, then the records it names) opens it meanwhile and saves the read the
 * channel's open and qos (2 round trips, 3–10 ms on a loaded broker). Closed by the read that takes it.
 */
export async function openReadChannel(
  openChannel: () => Promise<amqp.Channel>,
  prefetch: number,
): Promise<amqp.Channel> {
  const channel: ReadChannel = await openChannel();
  channel.on('error', () => undefined);
  await channel.prefetch(prefetch, false);
  channel[PREFETCH_SET] = prefetch;
  return channel;
}
