import type * as amqp from 'amqplib';
import { ConfigurationError, type Logger } from '../core';
import { checkQueueIfExists, withThrowawayChannel, type OutgoingMessage } from '../connection';
import type { QueueAssertion } from '../topology';
import { DeadLetterCollector, type ParkingQueue } from './dead-letter-collector';
import { DeadLetterIndex, type IndexedLetter, type IndexStats } from './dead-letter-index';
import type { LetterFilter } from './letter-filter';
import {
  decodeRecord,
  letterDetail,
  markerMessage,
  signedFields,
  type LetterDetail,
  type LoggedLetter,
  type MarkerAction,
} from './log-record';
import type { ResolvedDeadLetterLogOptions } from './options';
import { LogLock } from './log-lock';
import { replayLetters, type ReplayOptions, type ReplayResult } from './replay-letters';
import { memoryQueries, ScanQueries, type LetterQueries } from './scan-queries';
import { lastOffset, readStream, type StreamRecord } from '../streams';
import type { RecordReader, RecordTrust } from '../records';

export interface DeadLetterLogDeps {
  readonly openChannel: () => Promise<amqp.Channel>;
  /** Confirmed publish. */
  readonly send: (message: OutgoingMessage) => Promise<void>;
  /** The log stream's name (topology naming). */
  readonly stream: string;
  /** Its offset index's stream (topology naming), declared with the log's retention on first use. */
  readonly indexStream: string;
  /** The stream as the plan declares it (with its retention): asserted before its first use. */
  readonly assertion: QueueAssertion;
  /** The job queues: key, parking queue, broker name. */
  readonly queues: readonly (ParkingQueue & { readonly name: string })[];
  /** The queue key a job belongs to in the current topology; undefined for a job it does not declare. */
  readonly jobQueue: (jobName: string) => string | undefined;
  readonly options: ResolvedDeadLetterLogOptions;
  /** `memory`: an index in this process, built once and followed; `scan`: one read of the log a query. */
  readonly index: 'memory' | 'scan';
  readonly publishTimeoutMs: number;
  readonly log: Logger;
  /** Signs the markers (and the collector's letters); verifies, counts and skips what is read. */
  readonly trust: RecordTrust;
}

/** One page of the log, oldest first. */
export interface LogPage {
  readonly letters: LoggedLetter[];
  /** Offset to pass as `from` for the next page; undefined at the end of the log. */
  readonly next: number | undefined;
}

/** One letter as `show` returns it: what the index knows, and what only its record holds. */
export type ShownLetter = IndexedLetter & LetterDetail;

export interface PurgeResult {
  readonly selected: number;
  readonly purged: number;
  readonly dryRun: boolean;
}

export interface LogStats extends IndexStats {
  readonly stream: string;
  /** Letters still waiting in the parking queues to be moved into the log. */
  readonly parked: number;
}

/**
 * The dead-letter log: a stream of every dead letter of the namespace, browsed by offset without
 * consuming, searched through an in-process index, replayed and purged by appending markers.
 */
export class DeadLetterLog {
  readonly index: DeadLetterIndex;
  private readonly collector: DeadLetterCollector;
  private declared: Promise<void> | undefined;
  private readonly queries: LetterQueries;
  private readonly lock: LogLock;

  constructor(private readonly deps: DeadLetterLogDeps) {
    this.index = new DeadLetterIndex(
      deps.openChannel,
      deps.stream,
      deps.options.endIdleMs,
      deps.trust.reader('dead-letter-log'),
    );
    this.collector = new DeadLetterCollector({ ...deps });
    this.queries = deps.index === 'scan' ? new ScanQueries(deps) : memoryQueries(this.index);
    this.lock = new LogLock(deps.openChannel, deps.stream);
  }

  /** Declares the stream (durable, retention by age and size). Idempotent. */
  ensure(): Promise<void> {
    this.declared ??= this.declare().catch((error: unknown) => {
      this.declared = undefined;
      throw error;
    });
    return this.declared;
  }

  /** Moves what the parking queues hold now into the log (confirmed before acked). */
  async collect(): Promise<number> {
    await this.ensure();
    return this.collector.collectOnce(this.deps.queues);
  }

  /** Keeps moving dead letters into the log as they arrive (a worker process runs this). */
  async follow(): Promise<void> {
    await this.ensure();
    await this.collector.follow(this.deps.queues);
  }

  /** Stops `follow` and the index's reading. */
  async stop(): Promise<void> {
    await this.collector.close();
    await this.index.close();
  }

  /**
   * Up to `limit` letters from offset `from` (default: the first offset retention kept). Reads only that
   * page: milliseconds at any depth of the log.
   */
  async page(from: number | 'first' = 'first', limit = 50): Promise<LogPage> {
    await this.ensure();
    const letters: LoggedLetter[] = [];
    let last: number | undefined;
    const reader = this.deps.trust.reader('dead-letter-log');
    const { count } = await readStream(
      this.deps.openChannel,
      this.deps.stream,
      from,
      { max: limit * 4, idleMs: this.deps.options.endIdleMs, prefetch: Math.min(1000, limit * 4) },
      (r) => {
        last = r.offset;
        if (!isProven(reader, r)) return true;
        const record = decodeRecord(r.offset, r.content, r.properties);
        if (record?.kind === 'letter') letters.push(record.letter);
        return letters.length < limit;
      },
    );
    return { letters, next: count === 0 || last === undefined ? undefined : last + 1 };
  }

  /** The newest `limit` letters (markers skipped), oldest first. */
  async tail(limit = 50): Promise<LogPage> {
    await this.ensure();
    const end = await lastOffset(this.deps.openChannel, this.deps.stream, this.deps.options.endIdleMs);
    if (end === undefined) return { letters: [], next: undefined };
    const page = await this.page(Math.max(0, end - limit * 2 + 1), limit * 2);
    return { letters: page.letters.slice(-limit), next: end + 1 };
  }

  /**
   * One letter by offset, with its state from the index, and its headers and whole last error (stack
   * included) read from that one record of the stream: the index keeps only the error's first line.
   */
  async show(offset: number): Promise<ShownLetter | undefined> {
    const [letter] = await this.search({ offsets: [offset] }, 1);
    if (!letter) return undefined;
    let detail: LetterDetail = { headers: {}, lastError: undefined };
    await readStream(
      this.deps.openChannel,
      this.deps.stream,
      offset,
      { max: 1, until: offset, idleMs: this.deps.options.endIdleMs, prefetch: 10 },
      (r) => {
        if (r.offset === offset && isProven(this.deps.trust.reader('dead-letter-log'), r))
          detail = letterDetail(r.properties);
      },
    );
    return { ...letter, ...detail };
  }

  /** Letters matching the filter, oldest first, with their state (dead, replayed, purged). */
  async search(filter: LetterFilter, limit?: number): Promise<IndexedLetter[]> {
    await this.ensure();
    return this.queries.search(filter, limit);
  }

  /** How many letters match the filter. */
  async count(filter: LetterFilter): Promise<number> {
    await this.ensure();
    return this.queries.count(filter);
  }

  async stats(): Promise<LogStats> {
    await this.ensure();
    const stats = await this.queries.stats();
    let parked = 0;
    for (const q of this.deps.queues) {
      const counts = await checkQueueIfExists(this.deps.openChannel, q.deadQueue).catch(() => undefined);
      parked += counts?.messageCount ?? 0;
    }
    return { ...stats, stream: this.deps.stream, parked };
  }

  /**
   * Replays the dead letters matching the filter ({@link replayLetters}), holding the log ({@link LogLock}:
   * one replay or purge at a time, a dry run excepted) from before its selection.
   */
  async replay(filter: LetterFilter, options: ReplayOptions = {}): Promise<ReplayResult> {
    if (options.to !== undefined) this.queueName(options.to);
    await this.ensure();
    if (options.dryRun) return this.replaySelected(filter, options);
    return this.lock.run('replay', () => this.replaySelected(filter, options));
  }

  private async replaySelected(filter: LetterFilter, options: ReplayOptions): Promise<ReplayResult> {
    const { letters: selected, upTo, records } = await this.queries.select(filter, options.limit);
    const dryRun = options.dryRun ?? false;
    // Before any republish: a queue the configuration no longer declares, or a job the target queue
    // does not run (its worker would park it again as wrong-queue), must not stop a replay halfway.
    for (const letter of selected) this.queueName(this.targetQueue(letter.name, letter.queue, options.to));
    if (dryRun || selected.length === 0)
      return { selected: selected.length, replayed: 0, failed: 0, dryRun, upTo };
    const { replayed, failed } = await replayLetters(
      {
        ...this.deps,
        idleMs: this.deps.options.endIdleMs,
        queueName: (key) => this.queueName(key),
        isProven: (r) => isProven(this.deps.trust.reader('dead-letter-log'), r),
        targetQueue: (name, queue, to) => this.targetQueue(name, queue, to),
        mark: (offsets, to) => this.mark('replayed', offsets, to),
      },
      selected,
      options,
      records,
    );
    this.deps.log.info(
      { selected: selected.length, replayed, failed, to: options.to },
      'dead letters replayed',
    );
    return { selected: selected.length, replayed, failed, dryRun, upTo };
  }

  /** Marks the dead letters matching the filter purged (the log is append-only; retention removes them). */
  async purge(filter: LetterFilter, options: { dryRun?: boolean } = {}): Promise<PurgeResult> {
    await this.ensure();
    const dryRun = options.dryRun ?? false;
    const purge = async () => {
      const selected = (await this.queries.select(filter)).letters.map((l) => l.offset);
      if (!dryRun)
        for (let i = 0; i < selected.length; i += 5000)
          await this.mark('purged', selected.slice(i, i + 5000));
      return { selected: selected.length, purged: dryRun ? 0 : selected.length, dryRun };
    };
    return dryRun ? purge() : this.lock.run('purge', purge);
  }

  private async mark(action: MarkerAction, offsets: readonly number[], to?: string): Promise<void> {
    const marker = markerMessage(
      { action, offsets, at: Date.now(), ...(to !== undefined ? { to } : {}) },
      this.deps.trust,
    );
    await this.deps.send({
      exchange: '',
      routingKey: this.deps.stream,
      ...marker,
      deadline: Date.now() + this.deps.publishTimeoutMs,
      context: {},
    });
    this.index.markLocally(offsets, action);
  }

  /**
   * Where a letter is replayed: the job's queue in the current topology (it may have moved since the
   * letter died), else the queue it died in. `to` may only name that same queue.
   */
  private targetQueue(jobName: string | undefined, diedIn: string, to: string | undefined): string {
    const current = jobName === undefined ? undefined : this.deps.jobQueue(jobName);
    if (to !== undefined && current !== to)
      throw new ConfigurationError(
        current === undefined
          ? `cannot replay '${jobName ?? '(no job name)'}' into '${to}': the topology declares no such job`
          : `cannot replay '${jobName ?? '(no job name)'}' into '${to}': the job belongs to queue '${current}', ` +
              `and a worker of '${to}' would park it again as wrong-queue`,
      );
    return to ?? current ?? diedIn;
  }

  private queueName(key: string): string {
    const queue = this.deps.queues.find((q) => q.key === key);
    if (!queue)
      throw new ConfigurationError(
        `unknown queue '${key}' (declared: ${this.deps.queues.map((q) => q.key).join(', ')})`,
      );
    return queue.name;
  }

  private async declare(): Promise<void> {
    await withThrowawayChannel(this.deps.openChannel, (channel) =>
      channel.assertQueue(this.deps.stream, this.deps.assertion),
    );
  }
}

/** Whether a record of the log carries a valid proof (always true without a signing key). */
function isProven(reader: RecordReader, r: StreamRecord): boolean {
  return reader.accept(r.content, r.properties.headers, { offset: r.offset }, signedFields(r.properties));
}
