import { hostname } from 'node:os';
import {
  MAX_NOTE_CHARS,
  MAX_RELEASE_CHARS,
  encodeMark,
  readMarks,
  type GraphMark,
  type MarksRead,
} from '../aggregates';
import { isAmqpReply, withThrowawayChannel } from '../connection';
import { WarrenError } from '../core';
import type { RecordTrust } from '../records';
import { isJobQueue, MARKS_RETENTION, planStream, type TopologyPlan } from '../topology';
import type { OpsConnection } from './ops-connection';

/** What `ops.mark` takes: a deploy, with an optional note and the version deployed. */
export interface MarkInput {
  readonly kind: 'deploy';
  /** Shown beside the line, at most {@link MAX_NOTE_CHARS} characters. */
  readonly note?: string;
  /** The version deployed, at most {@link MAX_RELEASE_CHARS} characters. */
  readonly release?: string;
}

/** A mark's input checked: a typed error (`MARK_INVALID`) for anything else. */
export function checkMarkInput(input: MarkInput): GraphMark {
  const fail = (why: string) => new WarrenError('MARK_INVALID', `ops.mark: ${why}`);
  if (typeof input !== 'object' || input === null) throw fail('give { kind: "deploy", note?, release? }');
  const known = new Set(['kind', 'note', 'release']);
  const unknown = Object.keys(input).filter((k) => !known.has(k));
  if (unknown.length) throw fail(`unknown option(s) ${unknown.join(', ')}`);
  if (input.kind !== 'deploy')
    throw fail(`kind must be 'deploy' (pauses and resumes are marked by ops.pause and ops.resume)`);
  const text = (name: string, value: unknown, max: number) => {
    if (value === undefined) return;
    if (typeof value !== 'string' || value.trim() === '' || value.length > max)
      throw fail(`${name} must be a non-empty string of at most ${max} characters`);
  };
  text('note', input.note, MAX_NOTE_CHARS);
  text('release', input.release, MAX_RELEASE_CHARS);
  return {
    kind: 'deploy',
    at: Date.now(),
    host: hostname().slice(0, 200),
    ...(input.note !== undefined ? { note: input.note } : {}),
    ...(input.release !== undefined ? { release: input.release } : {}),
  };
}

/** The mark `ops.pause` or `ops.resume` leaves. */
export function pauseMark(queue: string, paused: boolean): GraphMark {
  return { kind: paused ? 'pause' : 'resume', at: Date.now(), host: hostname().slice(0, 200), queue };
}

/**
 * Appends a mark to the namespace's marks stream, signed (with a key), confirmed by the broker. `create`:
 * declare the stream if it is missing (`ops.mark`); otherwise (a pause's mark) a namespace whose stream
 * does not exist (no process runs with `aggregates`, no deploy was marked) gets no mark, and false.
 */
export async function appendMark(
  plan: TopologyPlan,
  connection: OpsConnection,
  mark: GraphMark,
  create: boolean,
): Promise<boolean> {
  const { manager, confirms, trust } = await connection.open();
  const stream = planStream('marks', MARKS_RETENTION, plan.naming);
  const exists = await withThrowawayChannel(
    () => manager.openChannel(),
    async (channel) => {
      if (create) return Boolean(await channel.assertQueue(stream.name, stream.assertion));
      return channel.checkQueue(stream.name).then(
        () => true,
        (error: unknown) => {
          if (isAmqpReply(error, 'NOT_FOUND')) return false;
          throw error;
        },
      );
    },
  );
  if (!exists) return false;
  const content = encodeMark(mark);
  await confirms.send({
    exchange: '',
    routingKey: stream.name,
    content,
    properties: {
      persistent: true,
      contentType: 'application/json',
      headers: trust.proof('marks', content),
    },
    deadline: Date.now() + 10_000,
    context: {},
  });
  return true;
}

/** The marks in [fromMs, toMs] for a graph; none (and no error) when the stream does not exist. */
export async function readGraphMarks(
  plan: TopologyPlan,
  connection: OpsConnection,
  trust: RecordTrust,
  range: { readonly fromMs: number; readonly toMs: number; readonly idleMs: number },
): Promise<MarksRead> {
  const { manager } = await connection.open();
  const queues = new Set(plan.queues.filter(isJobQueue).map((q) => q.key));
  try {
    return await readMarks(
      () => manager.openChannel(),
      { stream: plan.naming.marks(), ...range, queues },
      trust.reader('marks'),
    );
  } catch (error) {
    if (!isAmqpReply(error, 'NOT_FOUND')) throw error;
    return { marks: [], skipped: 0 };
  }
}
