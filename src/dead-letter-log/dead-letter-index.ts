import type * as amqp from 'amqplib';
import { compileFilter, type LetterFilter, type LetterState } from './letter-filter';
import { decodeRecord, signedFields, type LoggedLetter, type LogRecord } from './log-record';
import type { RecordReader } from '../records';
import { firstOffset, followStream, readToEnd, type StreamFollower, type StreamRecord } from '../streams';

/** A letter as search returns it: what the log holds plus its state from the markers after it. */
export interface IndexedLetter extends LoggedLetter {
  readonly state: LetterState;
}

/** What the index knows of the log as a whole. */
export interface IndexStats {
  /** Offsets below this expired (retention dropped them); 0 when nothing did. */
  readonly expiredBefore: number;
  /** The offset the next record will get, as far as the index has read. */
  readonly nextOffset: number;
  readonly letters: number;
  /** When the oldest letter still kept died: everything that died before it may have expired. */
  readonly keptSince: Date | undefined;
  readonly byState: Readonly<Record<LetterState, number>>;
  /**
   * Letters that expired while still dead (never replayed or purged), counted by this index while it
   * watched; a cold index cannot know those that expired before it started.
   */
  readonly expiredDead: number;
}

const SCAN_PREFETCH = 2000;
/** How stale the "expired up to" offset may be for a search (stats always checks). */
const RETENTION_CHECK_MS = 5000;

/**
 * The search index of the dead-letter log. It lives in the process that queries (the operations API):
 * built by reading the stream from its first offset. A cold start (the CLI's case) is that one scan of the
 * log (~35k records/s); * after it a consumer stays on the stream and applies each new record as it arrives, so a warm query only
 * filters the letters in memory. The log stays the truth: the index can always be rebuilt.
 */
export class DeadLetterIndex {
  private readonly letters = new Map<number, LoggedLetter>();
  private readonly states = new Map<number, LetterState>();
  private readonly byJobId = new Map<string, number[]>();
  private next = 0;
  private first = 0;
  private expiredDead = 0;
  private syncing: Promise<void> | undefined;
  private follower: StreamFollower | undefined;
  private retentionCheckedAt = 0;

  constructor(
    private readonly openChannel: () => Promise<amqp.Channel>,
    private readonly stream: string,
    private readonly idleMs: number,
    private readonly reader: RecordReader,
  ) {}

  /**
   * Brings the index up to date: the first call scans the log and then follows it; later calls return at
   * once while the follower runs (re-reading from where it stopped if its channel closed). `retention`
   * also checks what retention dropped now (otherwise at most every few seconds).
   */
  async sync(retention = false): Promise<void> {
    if (this.follower && !this.follower.isClosed) {
      if (retention || Date.now() - this.retentionCheckedAt > RETENTION_CHECK_MS) await this.checkRetention();
      return;
    }
    this.syncing ??= this.catchUp().finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }

  /**
   * Brings the index up to the log's end as it is now, past what the follower delivered so far: a
   * replay's or purge's selection must see every marker appended before it (another process's replay
   * that just ended, say), where a search may lag by the follower's milliseconds.
   */
  async syncToEnd(): Promise<void> {
    await this.sync();
    await this.readTail();
  }

  /** Stops following the log. */
  async close(): Promise<void> {
    await this.follower?.close();
    this.follower = undefined;
  }

  /** How many letters match, without building the results. */
  count(filter: LetterFilter): number {
    const matches = compileFilter(filter);
    let n = 0;
    for (const letter of this.letters.values())
      if (matches(letter, this.states.get(letter.offset) ?? 'dead')) n += 1;
    return n;
  }

  search(filter: LetterFilter, limit = Number.POSITIVE_INFINITY): IndexedLetter[] {
    const matches = compileFilter(filter);
    const found: IndexedLetter[] = [];
    const candidates =
      filter.jobId !== undefined
        ? (this.byJobId.get(filter.jobId) ?? [])
            .map((o) => this.letters.get(o))
            .filter((l) => l !== undefined)
        : this.letters.values();
    for (const letter of candidates) {
      const state = this.states.get(letter.offset) ?? 'dead';
      if (!matches(letter, state)) continue;
      found.push({ ...letter, state });
      if (found.length >= limit) break;
    }
    return found;
  }

  get(offset: number): IndexedLetter | undefined {
    const letter = this.letters.get(offset);
    return letter && { ...letter, state: this.states.get(offset) ?? 'dead' };
  }

  stats(): IndexStats {
    const byState: Record<LetterState, number> = { dead: 0, replayed: 0, purged: 0 };
    let oldest: LoggedLetter | undefined;
    for (const letter of this.letters.values()) {
      byState[this.states.get(letter.offset) ?? 'dead'] += 1;
      if (oldest === undefined || letter.offset < oldest.offset) oldest = letter;
    }
    return {
      keptSince: oldest && new Date(oldest.deadAt),
      expiredBefore: this.first,
      nextOffset: this.next,
      letters: this.letters.size,
      byState,
      expiredDead: this.expiredDead,
    };
  }

  /**
   * Records a marker this process appended (and saw confirmed), so the next query shows it before the
   * read reaches it; reading the marker later changes nothing.
   */
  markLocally(offsets: readonly number[], action: LetterState): void {
    for (const offset of offsets) if (this.letters.has(offset)) this.states.set(offset, action);
  }

  private apply(record: LogRecord): void {
    if (record.kind === 'letter') {
      this.letters.set(record.offset, record.letter);
      if (record.letter.jobId !== undefined) {
        const list = this.byJobId.get(record.letter.jobId) ?? [];
        list.push(record.offset);
        this.byJobId.set(record.letter.jobId, list);
      }
    } else {
      for (const offset of record.marker.offsets)
        if (this.letters.has(offset)) this.states.set(offset, record.marker.action);
    }
    this.next = Math.max(this.next, record.offset + 1);
  }

  private async catchUp(): Promise<void> {
    await this.checkRetention();
    await this.readTail();
    this.follower = await followStream(this.openChannel, this.stream, this.next, this.onNewRecord);
  }

  /** Reads from where the index stopped to the log's end as it is now. */
  private readTail(): Promise<unknown> {
    return readToEnd(
      this.openChannel,
      this.stream,
      Math.max(this.next, this.first),
      { idleMs: this.idleMs, prefetch: SCAN_PREFETCH },
      this.onNewRecord,
    );
  }

  /** A record the index has not applied yet (a read and the follower may both deliver it). */
  private readonly onNewRecord = (r: StreamRecord): void => {
    if (r.offset >= this.next) this.onRecord(r);
  };

  private onRecord(r: StreamRecord): void {
    this.next = Math.max(this.next, r.offset + 1);
    const where = { offset: r.offset, stream: this.stream };
    if (!this.reader.accept(r.content, r.properties.headers, where, signedFields(r.properties))) return;
    const record = decodeRecord(r.offset, r.content, r.properties);
    if (record) this.apply(record);
    else this.reader.skip('malformed', where);
  }

  private async checkRetention(): Promise<void> {
    this.retentionCheckedAt = Date.now();
    const first = await firstOffset(this.openChannel, this.stream, this.idleMs);
    if (first !== undefined && first > this.first) this.forgetBelow(first);
  }

  private forgetBelow(first: number): void {
    for (const [offset, letter] of this.letters) {
      if (offset >= first) continue;
      if ((this.states.get(offset) ?? 'dead') === 'dead' && this.next > 0) this.expiredDead += 1;
      this.letters.delete(offset);
      this.states.delete(offset);
      if (letter.jobId !== undefined) {
        const rest = (this.byJobId.get(letter.jobId) ?? []).filter((o) => o !== offset);
        if (rest.length) this.byJobId.set(letter.jobId, rest);
        else this.byJobId.delete(letter.jobId);
      }
    }
    this.first = first;
  }
}
