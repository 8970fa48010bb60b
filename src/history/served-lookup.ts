import { randomUUID } from 'node:crypto';
import type * as amqp from 'amqplib';
import { closeChannel } from '../core';
import type { RecordTrust } from '../records';
import type { StreamRecord } from '../streams';
import { encodeLookupRequest, isVouched, MAX_CORRELATION_CHARS, parseLookupReply } from './lookup-protocol';

const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';
/** How long a lookup waits for a server's answer before reading the streams itself, ms. */
export const SERVED_LOOKUP_TIMEOUT_MS = 1000;

/**
 * Asks the namespace's lookup server (lookup-server.ts) for the history records of a job: undefined when no
 * server consumes the lookup queue (known from the queue's consumer count, read beside the reply consumer's
 * setup, so asking costs no round trip more than answering), when it does not answer `ok` in time, or when
 * its answer cannot be trusted (lookup-protocol.ts). The records are the history's own: the caller proves
 * and parses each one as if read from the stream.
 */
export async function askLookupServer(
  openChannel: () => Promise<amqp.Channel>,
  queue: string,
  jobId: string,
  trust: RecordTrust,
  username: string | undefined,
  timeoutMs = SERVED_LOOKUP_TIMEOUT_MS,
): Promise<StreamRecord[] | undefined> {
  // Without a user the broker vouches for and without a key, no answer could be trusted: not worth asking.
  if (username === undefined && !trust.isSigning) return undefined;
  const probe = consumerCount(openChannel, queue);
  probe.catch(() => undefined);
  const channel = await openChannel();
  channel.on('error', () => undefined);
  const correlationId = randomUUID().slice(0, MAX_CORRELATION_CHARS);
  try {
    let answer: (records: StreamRecord[] | undefined) => void = () => undefined;
    const answered = new Promise<StreamRecord[] | undefined>((resolve) => {
      answer = resolve;
    });
    const [consumers] = await Promise.all([
      probe,
      channel.consume(
        DIRECT_REPLY_TO,
        (m) => {
          if (m === null || m.properties.correlationId !== correlationId) return;
          if (!isVouched(trust, 'lookup-reply', username, m, correlationId, { queue }))
            return answer(undefined);
          const reply = parseLookupReply(m.content);
          answer(reply?.status === 'ok' ? reply.records : undefined);
        },
        { noAck: true },
      ),
    ]);
    if (consumers === 0) return undefined;
    const content = encodeLookupRequest(jobId);
    channel.sendToQueue(queue, content, {
      replyTo: DIRECT_REPLY_TO,
      correlationId,
      expiration: String(timeoutMs),
      contentType: 'application/json',
      ...(username === undefined ? {} : { userId: username }),
      headers: trust.proof('lookup-request', content, correlationId),
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
    });
    const records = await Promise.race([answered, timedOut]);
    clearTimeout(timer);
    return records;
  } finally {
    void closeChannel(channel);
  }
}

/** The queue's consumers now, on a channel of its own (a missing queue closes it): 0 when there is none. */
async function consumerCount(openChannel: () => Promise<amqp.Channel>, queue: string): Promise<number> {
  const channel = await openChannel();
  channel.on('error', () => undefined);
  try {
    return (await channel.checkQueue(queue)).consumerCount;
  } catch {
    return 0; // no such queue: no server ever ran
  } finally {
    void closeChannel(channel);
  }
}
