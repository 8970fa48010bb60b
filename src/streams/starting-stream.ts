import { setTimeout as sleep } from 'node:timers/promises';
import { isStreamStarting } from '../connection';

/** How long a consumer waits for a stream that is still starting before it fails with the broker's refusal, ms. */
const STARTING_WAIT_MS = 10_000;
const STARTING_POLL_MS = 100;

/**
 * Runs what starts a stream consumer (a read, a follower, an append that locates its records), again every
 * STARTING_POLL_MS while the broker refuses the consume because the stream is still starting (RabbitMQ
 * 3.10, isStreamStarting): a process that declared the stream at the moment another connection created it.
 * The refusal answers the consume, before any record came or anything was appended, so nothing happens twice.
 */
export async function whileStreamStarts<T>(read: () => Promise<T>): Promise<T> {
  const giveUpAt = Date.now() + STARTING_WAIT_MS;
  for (;;) {
    try {
      return await read();
    } catch (error) {
      if (!isStreamStarting(error) || Date.now() + STARTING_POLL_MS > giveUpAt) throw error;
      await sleep(STARTING_POLL_MS);
    }
  }
}
