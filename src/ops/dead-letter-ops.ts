import type * as amqp from 'amqplib';
import type { OutgoingMessage } from '../connection';
import { createSilentLogger } from '../core';
import {
  DeadLetterLog,
  type IndexedLetter,
  type LetterFilter,
  type LogPage,
  type LogStats,
  type PurgeResult,
  type ReplayOptions,
  type ReplayResult,
  type ResolvedDeadLetterLogOptions,
  type ShownLetter,
} from '../dead-letter-log';
import type { RecordTrust } from '../records';
import { isDeclaredJobQueue, plannedStream, planStream, type TopologyPlan } from '../topology';
import type { ReadAgain } from './ops-connection';
import { UnknownQueueError } from './ops-errors';

export interface LogConnection {
  readonly openChannel: () => Promise<amqp.Channel>;
  readonly send: (message: OutgoingMessage) => Promise<void>;
  readonly trust: RecordTrust;
  readonly read: ReadAgain;
}

/**
 * `ops.dead`: the dead-letter log for operators. Its search index lives in this object: the first query
 * reads the whole log (a cold start), later ones read only what was appended since (warm).
 */
export class DeadLetterOps {
  private log: DeadLetterLog | undefined;

  /** Made by createOps (`ops.dead`); not meant to be called directly. */
  constructor(
    private readonly plan: TopologyPlan,
    private readonly options: ResolvedDeadLetterLogOptions,
    private readonly index: 'memory' | 'scan',
    private readonly publishTimeoutMs: number,
    private readonly connect: () => Promise<LogConnection>,
  ) {}

  /** Moves the letters waiting in the parking queues into the log (each confirmed before it is acked). */
  async collect(): Promise<number> {
    return (await this.open()).collect();
  }

  /** A page of letters from an offset (default the oldest kept), without consuming anything. */
  async page(from?: number, limit?: number): Promise<LogPage> {
    return this.reading((log) => log.page(from, limit));
  }

  /** The newest letters. */
  async tail(limit?: number): Promise<LogPage> {
    return this.reading((log) => log.tail(limit));
  }

  /**
   * One letter with its state, its headers and its whole last error (name, message, stack), read from its
   * record in the stream: the search index keeps only the error's first line.
   */
  async show(offset: number): Promise<ShownLetter | undefined> {
    return this.reading((log) => log.show(offset));
  }

  async search(filter: LetterFilter, limit?: number): Promise<IndexedLetter[]> {
    this.checkQueue(filter.queue);
    return this.reading((log) => log.search(filter, limit));
  }

  /** How many letters match the filter (no results built: cheaper than `search` for a large match). */
  async count(filter: LetterFilter): Promise<number> {
    this.checkQueue(filter.queue);
    return this.reading((log) => log.count(filter));
  }

  /**
   * Replays the dead letters the filter selects: dry run counts, `ratePerSecond` paces (default 1000/s),
   * `to` sends them to another job queue. Each replay is confirmed before the letter is marked replayed.
   */
  async replay(filter: LetterFilter, options: ReplayOptions = {}): Promise<ReplayResult> {
    this.checkQueue(filter.queue);
    this.checkQueue(options.to);
    return (await this.open()).replay(filter, options);
  }

  /** Marks the dead letters the filter selects purged (retention removes them from the log). */
  async purge(filter: LetterFilter, options: { dryRun?: boolean } = {}): Promise<PurgeResult> {
    this.checkQueue(filter.queue);
    return (await this.open()).purge(filter, options);
  }

  /** Counts by state, what expired, what still waits in the parking queues. */
  async stats(): Promise<LogStats> {
    return this.reading((log) => log.stats());
  }

  /** Stops following the log (createOps' `close` calls this). */
  async close(): Promise<void> {
    await this.log?.stop();
  }

  private checkQueue(key: string | undefined): void {
    if (key === undefined) return;
    const keys = this.plan.queues.filter((q) => q.role === 'job').map((q) => q.key);
    if (!keys.includes(key)) throw new UnknownQueueError(key, keys);
  }

  /** A read of the log: once more on the next connection when the connection was lost under it. */
  private async reading<T>(run: (log: DeadLetterLog) => Promise<T>): Promise<T> {
    const log = await this.open();
    return (await this.connect()).read(() => run(log));
  }

  private async open(): Promise<DeadLetterLog> {
    if (this.log) return this.log;
    const connection = await this.connect();
    // A config without deadLetterLog does not plan the log; ops.dead still reads (and collects into) it.
    const stream =
      plannedStream(this.plan, 'dead-letter-log') ??
      planStream('dead-letter-log', this.options, this.plan.naming);
    this.log ??= new DeadLetterLog({
      ...connection,
      stream: stream.name,
      indexStream: this.plan.naming.deadLetterLogIndex(),
      assertion: stream.assertion,
      queues: this.plan.queues
        .filter(isDeclaredJobQueue)
        .map((q) => ({ key: q.key, name: q.name, deadQueue: q.deadQueue })),
      jobQueue: (jobName) => this.plan.jobs.get(jobName)?.queue,
      options: this.options,
      index: this.index,
      publishTimeoutMs: this.publishTimeoutMs,
      log: createSilentLogger(),
    });
    return this.log;
  }
}
