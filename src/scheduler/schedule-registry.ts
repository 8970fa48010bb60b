import { randomUUID } from 'node:crypto';
import {
  isAmqpReply,
  withThrowawayChannel,
  type ConfirmPublisher,
  type ConnectionManager,
} from '../connection';
import type { Logger } from '../core';
import {
  CheckpointKeeper,
  followStream,
  readToEnd,
  rejectWhenStalled,
  watchForStaleCheckpoint,
  type StreamFollower,
  type StreamRecord,
} from '../streams';
import { JSON_CONTENT_TYPE } from '../message';
import {
  applyScheduleRecord,
  decodeScheduleRecord,
  encodeScheduleRecord,
  recordsOfState,
  type RegistryEntry,
  type ScheduleRecord,
} from './schedule-record';
import type { QueueAssertion } from '../topology';
import { CheckpointCodec, type Checkpoint, type RecordReader, type RecordTrust } from '../records';

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
  /** The registry's checkpoint stream, as the plan declares it. */
  readonly checkpoints: { readonly name: string; readonly assertion: QueueAssertion };
}

/**
 * The schedule registry on the broker: a stream of schedule records (see scheduler/schedule-record.ts),
 * appended with publisher confirms and followed by every process that schedules. `load()` reads it to
 * the end before anything fires: it appends a sync record of its own and follows until that record comes
 * back, so every record confirmed before the call has been applied (a stream keeps append order). After a
 * reconnect the follower resumes at the next offset it has not seen; nothing is applied twice. The first
 * read starts at the newest checkpoint this process can trust (streams/stream-checkpoints.ts), and a
 * process that read far past it writes a new one.
 */
export class ScheduleRegistry {
  /** Per id, the fold of its records so far. */
  readonly state = new Map<string, RegistryEntry>();
  private nextOffset = 0;
  private follower: StreamFollower | undefined;
  private following = false;
  private readonly syncs = new Map<string, () => void>();
  private reader: RecordReader;
  private readonly keeper: CheckpointKeeper;
  /** Whether the first read looked for a checkpoint yet, and whether it started from one. */
  private checkpointTried = false;
  private fromCheckpoint = false;

  constructor(private readonly deps: ScheduleRegistryDeps) {
    this.reader = deps.trust.reader('schedules');
    this.keeper = new CheckpointKeeper({
      codec: new CheckpointCodec(deps.trust, deps.stream, () => deps.manager.username),
      openChannel: () => deps.manager.openChannel(),
      checkpointStream: deps.checkpoints.name,
      append: async (message) => {
        await withThrowawayChannel(
          () => deps.manager.openChannel(),
          (channel) => channel.assertQueue(deps.checkpoints.name, deps.checkpoints.assertion),
        );
        await this.send(deps.checkpoints.name, message.content, message.headers, message.userId);
      },
      onWriteFailed: (error) => deps.log.debug({ err: error }, 'could not write a registry checkpoint'),
    });
  }

  /** Appends a record; resolves on the broker's confirm. */
  async append(record: ScheduleRecord): Promise<void> {
    await this.ensureStream();
    const content = encodeScheduleRecord(record);
    await this.send(this.deps.stream, content, this.deps.trust.proof('schedules', content));
  }

  private async send(
    stream: string,
    content: Buffer,
    headers: Record<string, string>,
    userId?: string,
  ): Promise<void> {
    await this.deps.confirms.send({
      exchange: '',
      routingKey: stream,
      content,
      properties: {
        persistent: true,
        mandatory: true,
        contentType: JSON_CONTENT_TYPE,
        headers,
        ...(userId === undefined ? {} : { userId }),
      },
      deadline: Date.now() + this.deps.publishTimeoutMs,
      context: { queue: stream },
    });
  }

  /** Starts following (once) and returns when every record written before the call has been applied. */
  async load(timeoutMs: number): Promise<void> {
    this.following = true;
    if (!this.follower || this.follower.isClosed) await this.follow();
    const token = randomUUID();
    const seen = new Promise<void>((resolve) => this.syncs.set(token, resolve));
    await this.append({ v: 1, action: 'sync', token, at: Date.now() });
    const follower = this.follower;
    const stopWatching =
      this.fromCheckpoint && follower !== undefined
        ? watchForStaleCheckpoint(follower, () => this.readAgainIfStale(follower))
        : () => {};
    const late = rejectWhenStalled(
      () => this.nextOffset,
      timeoutMs,
      () => new Error(`the schedule registry was not read to its end: no record came for ${timeoutMs} ms`),
    );
    try {
      await Promise.race([seen, late.stalled]);
    } finally {
      late.cancel();
      stopWatching();
      this.syncs.delete(token);
    }
    this.offerCheckpoint(true);
  }

  /**
   * The registry's state now, for a reader that neither schedules nor writes (`ops.schedules()`): one read
   * from the first record to the last one there was when it began, appending nothing (a sync record per
   * look would grow the stream forever) and leaving `state` alone. An absent stream is an empty registry.
   * The end is found beside the read: the last chunk, then 10 ms without a record (half a second, or
   * `idleMs` if longer, on an empty stream).
   */
  async snapshot(idleMs: number): Promise<Map<string, RegistryEntry>> {
    let state = new Map<string, RegistryEntry>();
    const reader = this.deps.trust.reader('schedules');
    const checkpoint = await this.keeper.newest();
    const restored = checkpoint === undefined ? undefined : restoreState(checkpoint, reader);
    if (restored !== undefined) state = restored;
    try {
      await readToEnd(
        () => this.deps.manager.openChannel(),
        this.deps.stream,
        restored === undefined ? 'first' : checkpoint!.upTo,
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
    await this.keeper.settled();
  }

  private async ensureStream(): Promise<void> {
    await withThrowawayChannel(
      () => this.deps.manager.openChannel(),
      (channel) => channel.assertQueue(this.deps.stream, this.deps.assertion),
    );
  }

  private async follow(): Promise<void> {
    await this.ensureStream();
    if (!this.checkpointTried) {
      this.checkpointTried = true;
      const checkpoint = await this.keeper.newest();
      const reader = this.deps.trust.reader('schedules');
      const restored = checkpoint === undefined ? undefined : restoreState(checkpoint, reader);
      if (restored !== undefined) {
        for (const [id, entry] of restored) this.state.set(id, entry);
        this.reader = reader;
        this.nextOffset = checkpoint!.upTo;
        this.fromCheckpoint = true;
        for (const id of restored.keys()) this.deps.onChange?.(id);
      }
    }
    this.follower = await followStream(
      () => this.deps.manager.openChannel(),
      this.deps.stream,
      this.nextOffset,
      (record) => this.visit(record),
    );
  }

  /**
   * Nothing delivered while this process's sync record is on the stream: the stream ends before the
   * checkpoint's offset (deleted and declared again since), so it reads again from the first record,
   * where it meets the same sync record, which ends the load.
   */
  private readAgainIfStale(follower: StreamFollower): void {
    if (!this.fromCheckpoint || this.follower !== follower) return;
    this.fromCheckpoint = false;
    this.state.clear();
    this.reader = this.deps.trust.reader('schedules');
    this.nextOffset = 0;
    this.follower = undefined;
    void follower
      .close()
      .then(() => this.follow())
      .catch((error) => this.deps.log.warn({ err: error }, 'could not read the schedule registry again'));
  }

  /** A checkpoint at `nextOffset` is the state of every record before it, caught up or not. */
  private offerCheckpoint(isCaughtUp = false): void {
    this.keeper.offer(isCaughtUp, this.nextOffset, () => ({
      upTo: this.nextOffset,
      guard: this.reader.guardSnapshot(),
      state: recordsOfState(this.state),
    }));
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
    this.offerCheckpoint();
  }
}

/**
 * The registry state a checkpoint holds, with its replay memory given to `reader`; undefined (the checkpoint
 * is not taken) when any of its records is not one a reader would apply.
 */
function restoreState(checkpoint: Checkpoint, reader: RecordReader): Map<string, RegistryEntry> | undefined {
  if (!Array.isArray(checkpoint.state)) return undefined;
  const state = new Map<string, RegistryEntry>();
  for (const value of checkpoint.state) {
    const record = decodeScheduleRecord(Buffer.from(JSON.stringify(value ?? null)));
    if (typeof record === 'string' || record.action === 'sync') return undefined;
    applyScheduleRecord(state, record);
  }
  return reader.restoreGuard(checkpoint.guard) ? state : undefined;
}
