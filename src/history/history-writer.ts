import type * as amqp from 'amqplib';
import { closeChannel, type Logger } from '../core';
import type { RecordTrust } from '../records';
import { HEADERS } from '../message';
import { eventWeight, MAX_BATCH_WEIGHT, type HistoryBatch, type HistoryEvent } from './history-event';
import { encodeKeyHashes } from './index-state';
import type { ResolvedHistoryOptions } from './options';

/**
 * Writes the job history: events are buffered and appended as one stream record per batch (every
 * `flushMs` or `maxBatch` events), on a plain channel without confirms. History is a view, not a
 * guarantee: a batch lost with a connection or a crash costs a few lines of history, never a job, and the
 * job path never waits for it.
 */
export class HistoryWriter {
  private buffer: HistoryEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private channel: amqp.Channel | undefined;
  /** About the buffered events' size as JSON (eventWeight), bytes. */
  private weight = 0;
  /** Events dropped because no channel was open when their batch was due. */
  dropped = 0;
  /** Called after each batch is appended (the background indexer, history-indexer.ts). */
  onAppended: (() => void) | undefined;

  constructor(
    private readonly stream: string,
    private readonly options: ResolvedHistoryOptions,
    private readonly origin: Omit<HistoryBatch, 'e'>,
    private readonly log: Logger,
    private readonly trust: RecordTrust,
  ) {}

  /** A ready hook: the channel of this connection generation. */
  async open(openChannel: () => Promise<amqp.Channel>): Promise<void> {
    const channel = await openChannel();
    channel.on('error', (error: unknown) => this.log.warn({ err: error }, 'history channel closed'));
    channel.on('close', () => {
      if (this.channel === channel) this.channel = undefined;
    });
    this.channel = channel;
  }

  record(event: HistoryEvent): void {
    this.buffer.push(event);
    this.weight += eventWeight(event);
    if (this.buffer.length >= this.options.maxBatch || this.weight >= MAX_BATCH_WEIGHT) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.flushMs);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.length === 0) return;
    const events = this.buffer;
    this.buffer = [];
    this.weight = 0;
    if (!this.channel) {
      this.dropped += events.length;
      return;
    }
    const batch: HistoryBatch = { ...this.origin, e: events };
    const content = Buffer.from(JSON.stringify(batch));
    // the job ids' hashes, so the index is built without parsing the batch (history-index.ts)
    const keys = encodeKeyHashes(idsOf(events));
    this.channel.publish('', this.stream, content, {
      contentType: 'application/json',
      persistent: true,
      headers: {
        ...this.trust.proof('history', content),
        ...(keys === undefined ? {} : { [HEADERS.indexKeys]: keys }),
      },
    });
    this.onAppended?.();
  }

  async stop(): Promise<void> {
    this.flush();
    const channel = this.channel;
    this.channel = undefined;
    await closeChannel(channel);
  }
}

function* idsOf(events: readonly HistoryEvent[]): Generator<string> {
  for (const e of events) yield e.j;
}
