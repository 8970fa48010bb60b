import type * as amqp from 'amqplib';
import { withThrowawayChannel, type ConfirmPublisher } from '../connection';
import { JSON_CONTENT_TYPE } from '../message';
import type { RecordReader, RecordTrust } from '../records';
import { followStream, readToEnd, type StreamFollower, type StreamRecord } from '../streams';
import type { QueueAssertion } from '../topology';
import { decodeLimitRecord, encodeLimitRecord, type LimitRecord } from './limit-record';

export interface LimitsStreamDeps {
  /** The stream's name (`<namespace>.warren.limits`) and its assertion (declared before the first use). */
  readonly stream: string;
  readonly assertion: QueueAssertion;
  readonly openChannel: () => Promise<amqp.Channel>;
  readonly confirms: Pick<ConfirmPublisher, 'send'>;
  readonly trust: RecordTrust;
  /** Each accepted record, in stream order. */
  readonly onRecord?: (record: LimitRecord) => void;
}

/** Reading to the end waits this long for a record before it calls the stream's end reached, ms. */
const READ_IDLE_MS = 2_000;

/**
 * The limits stream (docs/guide/per-key-limits.md#changing-limits-at-run-time): per-key overrides, one record
 * per change, appended with a confirm and followed by every process that owns keys with limits. The newest
 * record of a (target, key) wins. Every record goes through the record codec (proof with a key, replay guard,
 * shape): one another vhost user wrote without the key is skipped and counted, never applied.
 */
export class LimitsStream {
  /** The override per (target, key), as folded so far. */
  readonly overrides = new Map<string, LimitRecord>();
  private nextOffset = 0;
  private follower: StreamFollower | undefined;
  private reader: RecordReader;
  private declared = false;

  constructor(private readonly deps: LimitsStreamDeps) {
    this.reader = deps.trust.reader('limits');
  }

  /** Follows the stream from where this process stopped (the first record at first): the connection's ready hook. */
  async open(): Promise<void> {
    if (this.follower !== undefined && !this.follower.isClosed) return;
    this.declared = false;
    await this.declare();
    this.follower = await followStream(this.deps.openChannel, this.deps.stream, this.nextOffset, (record) =>
      this.apply(record),
    );
  }

  async stop(): Promise<void> {
    await this.follower?.close();
    this.follower = undefined;
  }

  /** Reads the whole stream once (ops): the overrides as they stand. */
  async read(): Promise<ReadonlyMap<string, LimitRecord>> {
    await this.declare();
    await readToEnd(
      this.deps.openChannel,
      this.deps.stream,
      'first',
      { idleMs: READ_IDLE_MS, prefetch: 500 },
      (record) => this.apply(record),
    );
    return this.overrides;
  }

  /** Appends a record; resolves on the broker's confirm. */
  async append(record: LimitRecord): Promise<void> {
    await this.declare();
    const content = encodeLimitRecord(record);
    await this.deps.confirms.send({
      exchange: '',
      routingKey: this.deps.stream,
      content,
      properties: {
        persistent: true,
        mandatory: true,
        contentType: JSON_CONTENT_TYPE,
        headers: this.deps.trust.proof('limits', content),
      },
      deadline: Date.now() + 10_000,
      context: { queue: this.deps.stream },
    });
  }

  private async declare(): Promise<void> {
    if (this.declared) return;
    await withThrowawayChannel(this.deps.openChannel, (channel) =>
      channel.assertQueue(this.deps.stream, this.deps.assertion),
    );
    this.declared = true;
  }

  private apply(record: StreamRecord): void {
    if (record.offset < this.nextOffset) return;
    this.nextOffset = record.offset + 1;
    const where = { stream: this.deps.stream, offset: record.offset };
    if (!this.reader.accept(record.content, record.properties.headers, where)) return;
    const decoded = decodeLimitRecord(record.content);
    if (decoded === undefined) {
      this.reader.skip('malformed', where);
      return;
    }
    const id = limitId(decoded.target, decoded.key);
    if (decoded.concurrency === undefined && decoded.max === undefined) this.overrides.delete(id);
    else this.overrides.set(id, decoded);
    this.deps.onRecord?.(decoded);
  }
}

export function limitId(target: string, key: string): string {
  return `${target}\u0000${key}`;
}
