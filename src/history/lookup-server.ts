import type * as amqp from 'amqplib';
import { closeChannel, type Logger } from '../core';
import { HEADERS, isDirectReplyAddress } from '../message';
import type { RecordReader, RecordTrust } from '../records';
import { readOffsets, type StreamRecord } from '../streams';
import type { HistoryBatch } from './history-event';
import { encodeKeyHashes } from './index-state';
import type { LiveHistory } from './live-history';
import {
  encodeLookupReply,
  isVouched,
  MAX_CORRELATION_CHARS,
  MAX_REPLY_BYTES,
  MAX_REQUEST_BYTES,
  parseLookupRequest,
  type LookupStatus,
} from './lookup-protocol';

/** A request waits this long for its marker to come back before it is answered `busy`, ms. */
const MARKER_WAIT_MS = 2000;
/** The first read of the whole history may take this long before its marker is given up, ms. */
const WARM_WAIT_MS = 10 * 60_000;
/** Requests taken at once from the lookup queue. */
const PREFETCH = 16;
/** A record no longer kept whole is read back; no record for this long ends that read, ms. */
const READ_IDLE_MS = 200;

export interface LookupServerDeps {
  readonly stream: string;
  /** The lookup queue, declared by the server (the plan's name and arguments). */
  readonly queue: { readonly name: string; readonly assertion: amqp.Options.AssertQueue };
  readonly live: LiveHistory;
  readonly openChannel: () => Promise<amqp.Channel>;
  readonly trust: RecordTrust;
  /** This process's broker user: the only one whose requests are answered without a key. */
  readonly username: () => string | undefined;
  /** The batch fields of this process (its markers are empty batches). */
  readonly origin: Omit<HistoryBatch, 'e'>;
  readonly log: Logger;
}

/**
 * `createWarren({ history: { serveLookups: true } })`: answers `ops.job(id)` for any process from a
 * {@link LiveHistory} (lookup-protocol.ts). The servers of a namespace share the lookup queue, a single active
 * consumer, so one of them answers and the others stand by, each following the history. Each request is
 * answered after a marker the server appends has come back through its follower, so the answer holds every
 * event appended before the question was asked. At most once: a request lost with a server costs the asker a
 * timeout, then its own read of the streams.
 */
export class LookupServer {
  private channel: amqp.Channel | undefined;
  private isWarm = false;
  private readonly reader: RecordReader;
  private answered = 0;
  private declined = 0;

  constructor(private readonly deps: LookupServerDeps) {
    this.reader = deps.trust.reader('lookup-request');
  }

  /** A ready step after the history's own: follows the history, then takes requests. */
  async open(): Promise<void> {
    const { live, openChannel, queue, log } = this.deps;
    await live.open();
    const channel = await openChannel();
    channel.on('error', (error: unknown) => log.warn({ err: error }, 'lookup channel closed'));
    channel.on('close', () => {
      if (this.channel === channel) this.channel = undefined;
    });
    this.channel = channel;
    await channel.assertQueue(queue.name, queue.assertion);
    await channel.prefetch(PREFETCH, false);
    if (!this.isWarm) {
      const { token, reached } = live.marker(WARM_WAIT_MS);
      this.appendMarker(channel, token);
      void reached.then((isReached) => {
        this.isWarm ||= isReached;
      });
    }
    await channel.consume(queue.name, (m) => void this.serve(channel, m).catch(() => undefined), {
      noAck: false,
    });
  }

  /**
   * Whether it has read the history once (before that it answers `warming`), the requests answered with
   * their records (`ok`), those sent back to read the streams, and the batches its index holds.
   */
  counts(): { ready: boolean; answered: number; declined: number; batches: number } {
    const { answered, declined } = this;
    return { ready: this.isWarm, answered, declined, batches: this.deps.live.size };
  }

  async stop(): Promise<void> {
    const channel = this.channel;
    this.channel = undefined;
    await closeChannel(channel);
    await this.deps.live.close();
  }

  private async serve(channel: amqp.Channel, message: amqp.ConsumeMessage | null): Promise<void> {
    if (message === null) return;
    channel.ack(message);
    const { replyTo, correlationId } = message.properties;
    const where = { queue: this.deps.queue.name };
    if (typeof replyTo !== 'string' || !isDirectReplyAddress(replyTo))
      return void this.reader.skip('malformed', where);
    if (typeof correlationId !== 'string' || correlationId.length > MAX_CORRELATION_CHARS)
      return void this.reader.skip('malformed', where);
    const reply = (status: LookupStatus, body = encodeLookupReply(status)) => {
      if (status === 'ok') this.answered += 1;
      else this.declined += 1;
      this.send(channel, replyTo, correlationId, body);
    };
    if (message.content.length > MAX_REQUEST_BYTES) {
      this.reader.skip('too-large', where);
      return reply('refused');
    }
    if (!isVouched(this.deps.trust, 'lookup-request', this.deps.username(), message, correlationId, where)) {
      this.reader.skip('unsigned', where);
      return reply('refused');
    }
    const request = parseLookupRequest(message.content, this.deps.trust.isSigning);
    if ('refused' in request) {
      this.reader.skip('malformed', { ...where, why: request.refused });
      return reply('refused');
    }
    if (!this.isWarm) return reply('warming');
    const body = await this.answer(channel, request.jobId);
    if (body === undefined) reply('busy');
    else if (body.length > MAX_REPLY_BYTES) reply('too-large');
    else reply('ok', body);
  }

  /** The job's records once this server's marker came back; undefined when it did not in time. */
  private async answer(channel: amqp.Channel, jobId: string): Promise<Buffer | undefined> {
    const { live, openChannel, stream } = this.deps;
    await live.ensureFollowing();
    const { token, reached } = live.marker(MARKER_WAIT_MS);
    this.appendMarker(channel, token);
    if (!(await reached)) return undefined;
    const records = new Map<number, StreamRecord>();
    const missing: number[] = [];
    for (const offset of live.offsetsOf(jobId)) {
      const kept = live.cached(offset);
      if (kept === undefined) missing.push(offset);
      else records.set(offset, kept);
    }
    if (missing.length > 0)
      await readOffsets(openChannel, stream, missing, READ_IDLE_MS, (r) => records.set(r.offset, r));
    return encodeLookupReply(
      'ok',
      [...records.values()].sort((a, b) => a.offset - b.offset),
    );
  }

  /** An empty batch carrying the token: every reader of the history passes it by (no job id in it). */
  private appendMarker(channel: amqp.Channel, token: string): void {
    const content = Buffer.from(JSON.stringify({ ...this.deps.origin, e: [] }));
    channel.sendToQueue(this.deps.stream, content, {
      contentType: 'application/json',
      persistent: false,
      headers: {
        ...this.deps.trust.proof('history', content),
        [HEADERS.indexKeys]: encodeKeyHashes([]),
        [HEADERS.lookupMarker]: token,
      },
    });
  }

  private send(channel: amqp.Channel, replyTo: string, correlationId: string, body: Buffer): void {
    const user = this.deps.username();
    channel.sendToQueue(replyTo, body, {
      correlationId,
      ...(user === undefined ? {} : { userId: user }),
      headers: this.deps.trust.proof('lookup-reply', body, correlationId),
    });
  }
}
