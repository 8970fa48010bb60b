import { randomUUID } from 'node:crypto';
import type * as amqp from 'amqplib';
import { closeChannel } from '../core';
import type { RecordTrust } from '../records';
import { consumeNoWait, type StreamRecord } from '../streams';
import { encodeLookupRequest, isVouched, parseLookupReply } from './lookup-protocol';

const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';
/** How long a lookup waits for a server's answer before reading the streams itself, ms. */
export const SERVED_LOOKUP_TIMEOUT_MS = 1000;

/**
 * Asks the namespace's lookup server (lookup-server.ts) for the history records of a job: undefined when no
 * server consumes the lookup queue, when it does not answer `ok` in time, or when its answer cannot be
 * trusted (lookup-protocol.ts). The records are the history's own: the caller proves and parses each one as
 * if read from the stream.
 *
 * The request goes out as soon as the reply consumer is asked for (without waiting for its consume-ok: the
 * broker takes a channel's frames in order); beside it, on a channel of its own, the lookup queue's consumer
 * count says whether anyone will answer, and a 0 (or no queue) ends the wait at once. A request nobody takes
 * expires in the queue after `timeoutMs`.
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
  let answer: (records: StreamRecord[] | undefined) => void = () => undefined;
  const answered = new Promise<StreamRecord[] | undefined>((resolve) => {
    answer = resolve;
  });
  consumerCount(openChannel, queue).then(
    (n) => n === 0 && answer(undefined),
    () => answer(undefined),
  );
  const channel = await openChannel();
  channel.on('error', () => undefined);
  const correlationId = randomUUID();
  const onReply = (m: amqp.ConsumeMessage | null) => {
    if (m === null || m.properties.correlationId !== correlationId) return;
    if (!isVouched(trust, 'lookup-reply', username, m, correlationId, { queue })) return answer(undefined);
    const reply = parseLookupReply(m.content);
    answer(reply?.status === 'ok' ? reply.records : undefined);
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    if (!consumeNoWait(channel, DIRECT_REPLY_TO, onReply, {}, true))
      await channel.consume(DIRECT_REPLY_TO, onReply, { noAck: true });
    const content = encodeLookupRequest(jobId);
    channel.sendToQueue(queue, content, {
      replyTo: DIRECT_REPLY_TO,
      correlationId,
      expiration: String(timeoutMs),
      contentType: 'application/json',
      ...(username === undefined ? {} : { userId: username }),
      headers: trust.proof('lookup-request', content, correlationId),
    });
    timer = setTimeout(() => answer(undefined), timeoutMs);
    return await answered;
  } finally {
    clearTimeout(timer);
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
