import type * as amqp from 'amqplib';
import type { RecordReader } from '../records';
import { readToEnd } from '../streams';
import type { IndexedLetter, IndexStats } from './dead-letter-index';
import { compileFilter, type LetterFilter, type LetterState } from './letter-filter';
import { decodeRecord, signedFields, type LoggedLetter } from './log-record';

/** What one pass over the log found. */
export interface LetterScan {
  /** The matching letters, oldest first: at most `limit`. */
  readonly letters: IndexedLetter[];
  /** How many letters match in all. */
  readonly count: number;
  readonly stats: IndexStats;
}

const SCAN_PREFETCH = 2000;

/**
 * Answers one query by reading the log once from its first kept offset to its end, keeping only what the
 * query needs: the matching letters (the first `limit` of them; every match while a `state` is asked for,
 * since a later marker may still change a letter's state) and one state per letter offset. Nothing of the
 * rest stays: memory grows with the matches, not with the log (an in-memory index keeps about 2.3× the
 * log's bytes). A fresh process (the CLI) has no index to warm, so this is its search.
 */
export async function scanLog(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  idleMs: number,
  reader: RecordReader,
  filter: LetterFilter,
  limit = Number.POSITIVE_INFINITY,
): Promise<LetterScan> {
  const matches = compileFilter({ ...filter, state: undefined });
  const keepAll = filter.state !== undefined;
  const kept = new Map<number, LoggedLetter>();
  const states = new Map<number, LetterState>();
  let matched = 0;
  let first: number | undefined;
  let next = 0;
  let oldest: LoggedLetter | undefined;
  await readToEnd(openChannel, stream, 'first', { idleMs, prefetch: SCAN_PREFETCH }, (r) => {
    first ??= r.offset;
    next = r.offset + 1;
    const where = { offset: r.offset, stream };
    if (!reader.accept(r.content, r.properties.headers, where, signedFields(r.properties))) return;
    const record = decodeRecord(r.offset, r.content, r.properties);
    if (record === undefined) {
      reader.skip('malformed', where);
      return;
    }
    if (record.kind === 'marker') {
      for (const offset of record.marker.offsets)
        if (states.has(offset)) states.set(offset, record.marker.action);
      return;
    }
    states.set(r.offset, 'dead');
    oldest ??= record.letter;
    if (!matches(record.letter, 'dead')) return;
    matched += 1;
    if (keepAll || kept.size < limit) kept.set(r.offset, record.letter);
  });
  const letters: IndexedLetter[] = [];
  for (const letter of kept.values()) {
    const state = states.get(letter.offset) ?? 'dead';
    if (filter.state !== undefined && state !== filter.state) continue;
    if (letters.length < limit) letters.push({ ...letter, state });
  }
  let count = matched;
  if (keepAll) {
    count = 0;
    for (const offset of kept.keys()) if (states.get(offset) === filter.state) count += 1;
  }
  return { letters, count, stats: statsOf(states, first, next, oldest) };
}

function statsOf(
  states: ReadonlyMap<number, LetterState>,
  first: number | undefined,
  next: number,
  oldest: LoggedLetter | undefined,
): IndexStats {
  const byState: Record<LetterState, number> = { dead: 0, replayed: 0, purged: 0 };
  for (const state of states.values()) byState[state] += 1;
  return {
    expiredBefore: first ?? 0,
    nextOffset: next,
    letters: states.size,
    keptSince: oldest && new Date(oldest.deadAt),
    byState,
    expiredDead: 0,
  };
}
