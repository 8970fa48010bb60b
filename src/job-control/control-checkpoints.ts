import { withThrowawayChannel } from '../connection';
import { HEADERS, JSON_CONTENT_TYPE } from '../message';
import { CheckpointCodec, type Checkpoint, type RecordReader } from '../records';
import { CheckpointKeeper } from '../streams';
import { parseControlRecord, type ControlRecord } from './control-record';
import type * as amqp from 'amqplib';
import type { OutgoingMessage } from '../connection';
import type { QueueAssertion } from '../topology';
import type { RecordTrust } from '../records';

/**
 * The job-control stream's checkpoints: `d` the latest decision per job id (as its record), `c` the offset
 * and time of each stored copy `[jobId, offset, t]` (the copy itself stays on the stream, read when used).
 */
export interface ControlState {
  readonly decisions: readonly ControlRecord[];
  readonly copies: readonly (readonly [jobId: string, ref: StoredCopyRef])[];
  /** The reader that took the checkpoint's replay memory: the pass goes on with it. */
  readonly reader: RecordReader;
}

export interface ControlCheckpointDeps {
  readonly stream: string;
  readonly checkpoints: { readonly name: string; readonly assertion: QueueAssertion };
  readonly openChannel: () => Promise<amqp.Channel>;
  readonly send: (message: OutgoingMessage) => Promise<void>;
  readonly timeoutMs: number;
  readonly trust: RecordTrust;
  readonly username: () => string | undefined;
}

/** The checkpoint keeper of a job control: checkpoints go to the planned checkpoint stream, confirmed. */
export function controlCheckpoints(deps: ControlCheckpointDeps): CheckpointKeeper {
  return new CheckpointKeeper({
    codec: new CheckpointCodec(deps.trust, deps.stream, deps.username),
    openChannel: deps.openChannel,
    checkpointStream: deps.checkpoints.name,
    append: async ({ content, userId, headers }) => {
      await withThrowawayChannel(deps.openChannel, (channel) =>
        channel.assertQueue(deps.checkpoints.name, deps.checkpoints.assertion),
      );
      await deps.send({
        exchange: '',
        routingKey: deps.checkpoints.name,
        content,
        properties: {
          contentType: JSON_CONTENT_TYPE,
          persistent: true,
          headers,
          ...(userId === undefined ? {} : { userId }),
        },
        deadline: Date.now() + deps.timeoutMs,
        context: {},
      });
    },
  });
}

/** Where a job's stored copy is, and what the listing of delayed jobs needs of it without reading it. */
export interface StoredCopyRef {
  readonly offset: number;
  readonly t: number;
  /** Its `warren-delayed` due time, ms since epoch. */
  readonly due?: number;
  /** Its job name (the copy's `type`). */
  readonly name?: string;
  /** The queue (full name) it is published into. */
  readonly queue?: string;
}

/** A `controllable` job that waits for its due time, as `dueNext` lists it. */
export interface DueJob {
  readonly jobId: string;
  readonly name: string;
  /** The queue's full name. */
  readonly queue: string | undefined;
  readonly dueAt: number;
}

const MAX_NAME_CHARS = 255;

/** What the view keeps of a `stored` record at `offset`. */
export function storedCopyRef(record: ControlRecord, offset: number): StoredCopyRef {
  const due = Number(record.h?.[HEADERS.delayed] ?? Number.NaN);
  const name = record.p?.type;
  return {
    offset,
    t: record.t,
    ...(Number.isSafeInteger(due) ? { due } : {}),
    ...(typeof name === 'string' && name.length <= MAX_NAME_CHARS ? { name } : {}),
    ...(typeof record.q === 'string' && record.q.length <= MAX_NAME_CHARS ? { queue: record.q } : {}),
  };
}

/** What a checkpoint keeps of the in-memory maps. */
export function controlState(
  decisions: ReadonlyMap<string, ControlRecord>,
  copies: ReadonlyMap<string, StoredCopyRef>,
): unknown {
  return {
    d: [...decisions.values()],
    c: [...copies].map(([jobId, { offset, t, due, name, queue }]) => [
      jobId,
      offset,
      t,
      due ?? null,
      name ?? null,
      queue ?? null,
    ]),
  };
}

/**
 * A checkpoint's state, every record checked as a reader checks one off the stream and its replay memory
 * given to `reader`; undefined (the checkpoint is not taken) when any part is not what a reader applies.
 */
export function restoreControlState(checkpoint: Checkpoint, reader: RecordReader): ControlState | undefined {
  const state = checkpoint.state as { d?: unknown; c?: unknown } | null;
  if (state === null || typeof state !== 'object' || !Array.isArray(state.d) || !Array.isArray(state.c))
    return undefined;
  const decisions: ControlRecord[] = [];
  for (const value of state.d) {
    const record = parseControlRecord(Buffer.from(JSON.stringify(value ?? null)));
    if (record === undefined || record.a === 'mark' || record.a === 'stored') return undefined;
    decisions.push(record);
  }
  const copies: [string, StoredCopyRef][] = [];
  for (const value of state.c) {
    // [job id, offset, t] (checkpoints before the delayed listing), or with [due, name, queue], each or null
    if (!Array.isArray(value) || (value.length !== 3 && value.length !== 6)) return undefined;
    const [jobId, offset, t, due, name, queue] = value as unknown[];
    if (typeof jobId !== 'string' || !Number.isSafeInteger(offset) || !Number.isSafeInteger(t))
      return undefined;
    if ((offset as number) >= checkpoint.upTo) return undefined;
    if (due !== undefined && due !== null && !Number.isSafeInteger(due)) return undefined;
    for (const text of [name, queue])
      if (text !== undefined && text !== null && (typeof text !== 'string' || text.length > MAX_NAME_CHARS))
        return undefined;
    copies.push([
      jobId,
      {
        offset: offset as number,
        t: t as number,
        ...(typeof due === 'number' ? { due } : {}),
        ...(typeof name === 'string' ? { name } : {}),
        ...(typeof queue === 'string' ? { queue } : {}),
      },
    ]);
  }
  return reader.restoreGuard(checkpoint.guard) ? { decisions, copies, reader } : undefined;
}
