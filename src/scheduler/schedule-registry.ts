import { randomUUID } from 'node:crypto';
import {
  isAmqpReply,
  withThrowawayChannel,
  type ConfirmPublisher,
  type ConnectionManager,
} from '../connection';
import type { Logger } from '../core';
import { followStream, readToEnd, type StreamFollower, type StreamRecord } from '../streams';
import { JSON_CONTENT_TYPE } from '../message';
import {
  applyScheduleRecord,
  decodeScheduleRecord,
  encodeScheduleRecord,
  type RegistryEntry,
  type ScheduleRecord,
} from './schedule-record';
import type { QueueAssertion } from '../topology';
import type { RecordReader, RecordTrust } from '../records';

export interface ScheduleRegistryDeps {
  readonly manager: ConnectionManager;
  readonly confirms: ConfirmPublisher;
  /** The stream's name (`<namespace>.warren.schedules`). */
  readonly stream: string;
  /** The stream as the plan declares it: asserted before its first use (ops does not apply the plan). */
  readonly assertion: QueueAssertion;
  readonly publishTimeoutMs: number;
  readonly log: Logger;
  /** Called after each record that changed an id's state was applied (stream order). */
  readonly onChange?: (id: string) => void;
  /** Signs the records this process appends; verifies, counts and skips what it reads. */
  readonly trust: RecordTrust;
}

/**
 * The schedule registry on the broker: a stream of schedule records (see scheduler/schedule-record.ts),
 * appended with publisher confirms and followed by every process that schedules. `load()` reads it to
 * the end before anything fires: it appends a sync record of its own and follows until that record comes
 * back, so every record confirmed before the call has been applied (a stream keeps append order). After a
 * reconnect the follower resumes at the next offset it has not seen; nothing is applied twice.
 */
export class ScheduleRegistry {
  /** Per id, the fold of its records so far. */
  readonly state = new Map<string, RegistryEntry>();
  private nextOffset = 0;
  private follower: StreamFollower | undefined;
  private following = false;
  private readonly syncs = new Map<string, () => void>();
  private readonly reader: RecordReader;

  constructor(private readonly deps: ScheduleRegistryDeps) {
    this.reader = deps.trust.reader('schedules');
  }

  /** Appends a record; resolves on the broker's confirm. */
  async append(record: ScheduleRecord): Promise<void> {
    await this.ensureStream();
    const content = encodeScheduleRecord(record);
    await this.deps.confirms.send({
      exchange: '',
      routingKey: this.deps.stream,
      content,
      properties: {
        persistent: true,
        mandatory: true,
        contentType: JSON_CONTENT_TYPE,
        headers: this.deps.trust.proof('schedules', content),
      },
      deadline: Date.now() + this.deps.publishTimeoutMs,
      context: { queue: this.deps.stream },
    });
  }

  /** Starts following (once) and returns when every record written before the call has been applied. */
  async load(timeoutMs: number): Promise<void> {
    this.following = true;
    if (!this.follower || this.follower.isClosed) await this.follow();
    const token = randomUUID();
    const seen = new Promise<void>((resolve) => this.syncs.set(token, resolve));
    await this.append({ v: 1, action: 'sync', token, at: Date.now() });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the schedule registry was not read to its end within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([seen, late]);
    } finally {
      clearTimeout(timer);
      this.syncs.delete(token);
    }
  }

  /**
   * The registry's state now, for a reader that neither schedules nor writes (`ops.schedules()`): one read
   * from the first record to the last one there was when it began, appending nothing (a sync record per
   * look would grow the stream forever) and leaving `state` alone. An absent stream is an empty registry.
   * The end is found beside the read: the last chunk, then 10 ms without a record (half a second, or
   * `idleMs` if longer, on an empty stream).
   */
  async snapshot(idleMs: number): Promise<Map<string, RegistryEntry>> {
    const state = new Map<string, RegistryEntry>();
    const reader = this.deps.trust.reader('schedules');
    try {
      await readToEnd(
        () => this.deps.manager.openChannel(),
        this.deps.stream,
        'first',
        { idleMs, prefetch: 500 },
        (message) => {
          const where = { offset: message.offset, stream: this.deps.stream };
          if (!reader.accept(message.content, message.properties.headers, where)) return;
          const record = decodeScheduleRecord(message.content);
          if (typeof record === 'string') {
            reader.skip(record === 'too large' ? 'too-large' : 'malformed', { ...where, why: record });
            return;
          }
          applyScheduleRecord(state, record);
        },
      );
    } catch (error) {
      if (!isAmqpReply(error, 'NOT_FOUND')) throw error;
    }
    return state;
  }

  /** The connection's ready hook: a follower lost with the old connection resumes where it stopped. */
  async open(): Promise<void> {
    if (this.following && (!this.follower || this.follower.isClosed)) await this.follow();
  }

  async close(): Promise<void> {
    this.following = false;
    const follower = this.follower;
    this.follower = undefined;
    await follower?.close();
  }

  private async ensureStream(): Promise<void> {
    await withThrowawayChannel(
      () => this.deps.manager.openChannel(),
      (channel) => channel.assertQueue(this.deps.stream, this.deps.assertion),
    );
  }

  private async follow(): Promise<void> {
    await this.ensureStream();
    this.follower = await followStream(
      () => this.deps.manager.openChannel(),
      this.deps.stream,
      this.nextOffset,
      (record) => this.visit(record),
    );
  }

  private visit(message: StreamRecord): void {
    if (message.offset < this.nextOffset) return;
    this.nextOffset = message.offset + 1;
    const where = { offset: message.offset, stream: this.deps.stream };
    if (!this.reader.accept(message.content, message.properties.headers, where)) return;
    const record = decodeScheduleRecord(message.content);
    // counted, and logged at most every few seconds: a flood of garbage must not flood the log
    if (typeof record === 'string') {
      this.reader.skip(record === 'too large' ? 'too-large' : 'malformed', { ...where, why: record });
      return;
    }
    if (record.action === 'sync') {
      this.syncs.get(record.token)?.();
      return;
    }
    applyScheduleRecord(this.state, record);
    this.deps.onChange?.(record.id);
  }
}
