import { withThrowawayChannel } from '../connection';
import { JSON_CONTENT_TYPE } from '../message';
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
  readonly copies: readonly (readonly [jobId: string, offset: number, t: number])[];
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

/** What a checkpoint keeps of the in-memory maps. */
export function controlState(
  decisions: ReadonlyMap<string, ControlRecord>,
  copies: ReadonlyMap<string, { readonly offset: number; readonly t: number }>,
): unknown {
  return {
    d: [...decisions.values()],
    c: [...copies].map(([jobId, { offset, t }]) => [jobId, offset, t]),
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
  const copies: [string, number, number][] = [];
  for (const value of state.c) {
    if (!Array.isArray(value) || value.length !== 3) return undefined;
    const [jobId, offset, t] = value as unknown[];
    if (typeof jobId !== 'string' || !Number.isSafeInteger(offset) || !Number.isSafeInteger(t))
      return undefined;
    if ((offset as number) >= checkpoint.upTo) return undefined;
    copies.push([jobId, offset as number, t as number]);
  }
  return reader.restoreGuard(checkpoint.guard) ? { decisions, copies, reader } : undefined;
}
