import { withThrowawayChannel } from '../connection';
import type { QueueAssertion } from '../topology';
import type { ResolvedDeadLetterLogOptions } from './options';
import type { IndexedStream, StreamRecord } from '../streams';
import type { CollectorDeps } from './dead-letter-collector';
import type { DeadLetterIndex, IndexedLetter, IndexStats } from './dead-letter-index';
import { indexKey, queryIndexed, type IndexedAnswer } from './indexed-query';
import type { LetterFilter } from './letter-filter';
import { scanLog, type LetterScan } from './letter-scan';

/** What the scan queries use of the log's dependencies (DeadLetterLogDeps has them). */
export interface ScanQueryDeps extends Omit<CollectorDeps, 'log'> {
  readonly indexStream: string;
  readonly assertion: QueueAssertion;
  readonly options: ResolvedDeadLetterLogOptions;
}

/** How the log answers search, count, stats and a replay's or purge's selection. */
export interface LetterQueries {
  search(filter: LetterFilter, limit?: number): Promise<IndexedLetter[]>;
  count(filter: LetterFilter): Promise<number>;
  stats(): Promise<IndexStats>;
  /** The dead letters a replay or purge selects, the last offset the selection looked at, and (scan) their records. */
  select(filter: LetterFilter, limit?: number): Promise<Selection>;
}

export interface Selection {
  readonly letters: IndexedLetter[];
  readonly upTo: number;
  readonly records?: ReadonlyMap<number, StreamRecord>;
}

/** `deadLetterIndex: 'memory'`: the index of the whole log in this process, built once and followed. */
export function memoryQueries(index: DeadLetterIndex): LetterQueries {
  return {
    search: async (filter, limit) => {
      await index.sync();
      return index.search(filter, limit);
    },
    count: async (filter) => {
      await index.sync();
      return index.count(filter);
    },
    stats: async () => {
      await index.sync(true);
      return index.stats();
    },
    select: async (filter, limit) => {
      await index.syncToEnd();
      const upTo = index.stats().nextOffset - 1;
      const letters = index.search({ ...filter, state: 'dead' }, limit).filter((l) => l.offset <= upTo);
      return { letters, upTo };
    },
  };
}

/**
 * The dead-letter log's queries without an index in the process (`deadLetterIndex: 'scan'`, the CLI's):
 * through the log's offset index when the filter names offsets, a job id, a payload field or a reason, else
 * one read of the whole log; either way only the matches are kept.
 */
export class ScanQueries implements LetterQueries {
  private indexDeclared: Promise<void> | undefined;

  constructor(private readonly deps: ScanQueryDeps) {}

  async search(filter: LetterFilter, limit?: number): Promise<IndexedLetter[]> {
    return (await this.query(filter, limit)).letters;
  }

  async count(filter: LetterFilter): Promise<number> {
    return (await this.query(filter, Number.POSITIVE_INFINITY, true)).count;
  }

  async stats(): Promise<IndexStats> {
    return (await this.scan({}, 0)).stats;
  }

  select(filter: LetterFilter, limit?: number): Promise<Selection> {
    return this.query({ ...filter, state: 'dead' }, limit);
  }

  async query(filter: LetterFilter, limit?: number, isCount = false): Promise<IndexedAnswer> {
    const key = indexKey(filter);
    if (key === undefined) {
      const found = await this.scan(filter, isCount ? 0 : limit);
      return {
        letters: found.letters,
        count: found.count,
        upTo: found.stats.nextOffset - 1,
        records: new Map(),
      };
    }
    await this.ensureIndex();
    const reader = this.deps.trust.reader('dead-letter-log');
    return queryIndexed(this.indexed(), reader, filter, key, isCount ? Number.POSITIVE_INFINITY : limit);
  }

  scan(filter: LetterFilter, limit?: number): Promise<LetterScan> {
    return scanLog(
      this.deps.openChannel,
      this.deps.stream,
      this.deps.options.endIdleMs,
      this.deps.trust.reader('dead-letter-log'),
      filter,
      limit,
    );
  }

  private indexed(): IndexedStream {
    const { deps } = this;
    const indexReader = deps.trust.reader('dead-letter-log');
    const where = (offset: number) => ({ offset, stream: deps.indexStream });
    return {
      openChannel: deps.openChannel,
      stream: deps.stream,
      indexStream: deps.indexStream,
      idleMs: deps.options.endIdleMs,
      acceptIndex: (r) => indexReader.accept(r.content, r.properties.headers, where(r.offset), 'index'),
      skipIndex: (r) => indexReader.skip('malformed', where(r.offset)),
      appendIndex: (content) =>
        deps.send({
          exchange: '',
          routingKey: deps.indexStream,
          content,
          properties: {
            persistent: true,
            contentType: 'application/octet-stream',
            headers: deps.trust.proof('dead-letter-log', content, 'index'),
          },
          deadline: Date.now() + deps.publishTimeoutMs,
          context: {},
        }),
    };
  }

  /** The index stream, declared with the log's retention on first use. */
  private ensureIndex(): Promise<void> {
    this.indexDeclared ??= withThrowawayChannel(this.deps.openChannel, (channel) =>
      channel.assertQueue(this.deps.indexStream, this.deps.assertion),
    ).then(
      () => undefined,
      (error: unknown) => {
        this.indexDeclared = undefined;
        throw error;
      },
    );
    return this.indexDeclared;
  }
}
