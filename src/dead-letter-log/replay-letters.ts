import type * as amqp from 'amqplib';
import type { OutgoingMessage } from '../connection';
import { HEADERS, replayProperties } from '../message';
import { X_ARGS } from '../topology';
import type { IndexedLetter } from './dead-letter-index';
import { readOffsets, type StreamRecord } from '../streams';

export interface ReplayOptions {
  /** Count what would be replayed; replay nothing. */
  readonly dryRun?: boolean;
  /** Republishes per second; 0 for no limit. Default 1000: a fixed service should not be flooded. */
  readonly ratePerSecond?: number;
  /** Replay into this job queue (by key) instead of each letter's own. */
  readonly to?: string;
  /** Replay at most this many. */
  readonly limit?: number;
}

export interface ReplayResult {
  /** Letters the filter selected (dead ones only, up to the log's end when the replay started). */
  readonly selected: number;
  /** Replayed: republished, confirmed, and marked replayed in the log. */
  readonly replayed: number;
  /** Republishes the broker did not confirm: those letters stay dead (not marked) and can be replayed again. */
  readonly failed: number;
  readonly dryRun: boolean;
  /** The log offset the selection stopped at: letters that die again land after it and are not replayed. */
  readonly upTo: number;
}

export const REPLAY_DEFAULT_RATE = 1000;
const CHUNK = 1000;
const WINDOW = 256;

export interface ReplayDeps {
  readonly openChannel: () => Promise<amqp.Channel>;
  readonly send: (message: OutgoingMessage) => Promise<void>;
  readonly stream: string;
  readonly publishTimeoutMs: number;
  readonly idleMs: number;
  /** The broker name of a job queue by key. */
  readonly queueName: (key: string) => string;
  /** Whether a record read back carries a valid proof (a letter's record is checked again before replay). */
  readonly isProven: (record: StreamRecord) => boolean;
  readonly targetQueue: (jobName: string | undefined, diedIn: string, to: string | undefined) => string;
  /** Appends a `replayed` marker for these offsets, confirmed. */
  readonly mark: (offsets: readonly number[], to: string | undefined) => Promise<void>;
}

/**
 * Replays selected letters in offset order, a chunk at a time: reads their records from the log, republishes
 * each to its queue (paced to the rate, a window of confirms in flight), and once the chunk's republishes
 * are confirmed appends one `replayed` marker naming the confirmed ones. The selection is fixed before the
 * first republish, so the replay ends even if every job dies again at once (its new letters come later in
 * the log, and carry `warren-replay-of`).
 */
export async function replayLetters(
  deps: ReplayDeps,
  letters: readonly IndexedLetter[],
  options: ReplayOptions,
  /** Records the selection already read (proven): not read again. */
  known: ReadonlyMap<number, StreamRecord> = new Map(),
): Promise<{ replayed: number; failed: number }> {
  const rate = options.ratePerSecond ?? REPLAY_DEFAULT_RATE;
  const started = Date.now();
  let sent = 0;
  let replayed = 0;
  let failed = 0;
  for (let i = 0; i < letters.length && failed === 0; i += CHUNK) {
    const chunk = letters.slice(i, i + CHUNK);
    const records = await readChunk(
      deps,
      chunk.filter((l) => !known.has(l.offset)),
    );
    for (const l of chunk) {
      const record = known.get(l.offset);
      if (record) records.set(l.offset, record);
    }
    const confirmed: number[] = [];
    const inFlight = new Set<Promise<void>>();
    for (const letter of chunk) {
      const record = records.get(letter.offset);
      if (!record) continue; // expired between the selection and the read
      if (rate > 0) await pace(started + (sent * 1000) / rate);
      sent += 1;
      const p = deps
        .send(replayMessage(deps, record, letter, options.to))
        .then(
          () => {
            confirmed.push(letter.offset);
          },
          () => {
            failed += 1;
          },
        )
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= WINDOW) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    if (confirmed.length) await deps.mark(confirmed, options.to);
    replayed += confirmed.length;
  }
  return { replayed, failed };
}

/**
 * Reads the chunk's records: one read per run of nearby offsets, several at once (readOffsets), so a sparse
 * selection neither scans the log between its letters nor waits for a thousand reads one after another.
 */
async function readChunk(
  deps: ReplayDeps,
  chunk: readonly IndexedLetter[],
): Promise<Map<number, StreamRecord>> {
  const records = new Map<number, StreamRecord>();
  await readOffsets(
    deps.openChannel,
    deps.stream,
    chunk.map((l) => l.offset),
    deps.idleMs,
    (r) => {
      if (deps.isProven(r)) records.set(r.offset, r);
    },
  );
  return records;
}

function replayMessage(
  deps: ReplayDeps,
  record: StreamRecord,
  letter: IndexedLetter,
  to: string | undefined,
): OutgoingMessage {
  const replays = record.properties.headers?.[HEADERS.replays];
  const properties = replayProperties(record.properties, {
    [X_ARGS.streamOffset]: undefined,
    [HEADERS.logKind]: undefined,
    [HEADERS.proof]: undefined,
    [HEADERS.replayOf]: letter.offset,
    [HEADERS.replays]: (typeof replays === 'number' ? replays : 0) + 1,
  });
  const queue = deps.targetQueue(letter.name, letter.queue, to);
  return {
    exchange: '',
    routingKey: deps.queueName(queue),
    content: record.content,
    properties,
    deadline: Date.now() + deps.publishTimeoutMs,
    context: { jobId: letter.jobId, jobName: letter.name, queue },
  };
}

function pace(at: number): Promise<void> {
  const wait = at - Date.now();
  return wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait)) : Promise.resolve();
}
