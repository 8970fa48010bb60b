import { HEADERS } from '../message';
import type { Checkpoint, CheckpointCodec } from '../records';
import {
  appendAndLocate,
  decodeEntries,
  encodeBlock,
  firstOffset,
  IndexBuilder,
  lastOffset,
  uncovered,
  type IndexBlock,
  type StreamRecord,
} from '../streams';
import { parseHistoryBatch } from './history-batch';
import {
  COMPACT_DELTAS,
  COMPACT_ENTRIES,
  decodeKeyHashes,
  DELTA_BLOCK,
  expandRuns,
  historyKeyHash,
  isStale,
  jobIdsOf,
  shardCount,
  toRuns,
  type HistoryIndexDeps,
  type IndexState,
} from './index-state';

/** What a round reads through the lookups' side of the index (history-index.ts). */
export interface IndexReader {
  checkpoint(): Promise<(Checkpoint & { state: IndexState }) | undefined>;
  acceptIndex(record: StreamRecord): boolean;
  readIndex(offsets: readonly number[], visit: (record: StreamRecord) => void): Promise<void>;
  readRange(from: number, to: number, visit: (record: StreamRecord) => void): Promise<void>;
}

/**
 * The writing side of the history's index (history-index.ts): one round reads the history from the newest
 * checkpoint to its end, appends a delta (or compacts everything into a new base) and a checkpoint.
 */
export class IndexRound {
  private declared: Promise<void> | undefined;

  constructor(
    private readonly deps: HistoryIndexDeps,
    private readonly codec: CheckpointCodec,
    private readonly reader: IndexReader,
  ) {}

  /**
   * One round. `rebuild` compacts whatever the deltas hold, reading the blocks back and the history where
   * they do not cover what the checkpoint claimed. A failure is thrown (the caller decides whether it matters).
   */
  async run(rebuild: boolean): Promise<void> {
    const { openChannel, stream, idleMs } = this.deps;
    this.declared ??= this.deps.declareStreams().catch((error: unknown) => {
      this.declared = undefined;
      throw error;
    });
    await this.declared;
    const startedAt = Date.now();
    const [cp, first, end] = await Promise.all([
      this.reader.checkpoint(),
      firstOffset(openChannel, stream, idleMs),
      lastOffset(openChannel, stream, idleMs),
    ]);
    if (first === undefined || end === undefined) return;
    const state: IndexState = cp === undefined || isStale(cp, end) ? { deltas: [] } : cp.state;
    const deltaEntries = state.deltas.reduce((n, d) => n + d[3], 0);
    // What the checkpoint claims is covered: a delta round reads past it; a rebuild reads the blocks back.
    const claims = [
      ...(state.base ? [{ from: state.base.from, to: state.base.to }] : []),
      ...state.deltas.map((d) => ({ from: d[1], to: d[2] })),
    ];
    const builder = new IndexBuilder(DELTA_BLOCK.offsets, DELTA_BLOCK.maxEntries);
    const fresh = rebuild ? [] : uncovered(claims, first, end);
    for (const gap of fresh) await this.indexRange(gap.from, gap.to, builder);
    const blocks = builder.finish();
    const newEntries = blocks.reduce((n, b) => n + b.entries.length, 0);
    const compact =
      rebuild ||
      state.base === undefined ||
      deltaEntries + newEntries > COMPACT_ENTRIES ||
      state.deltas.length + blocks.length > COMPACT_DELTAS;
    if (!compact) {
      if (blocks.length === 0) return;
      const offsets = await this.appendBlocks(blocks);
      const deltas = blocks.map((b, i) => [offsets[i]!, b.from, b.to, b.entries.length] as const);
      await this.appendCheckpoint(end, startedAt, { ...state, deltas: [...state.deltas, ...deltas] });
      return;
    }
    await this.compact(state, blocks, { first, end, startedAt });
  }

  /**
   * Reads the history `from..to` and adds each batch's job ids to the builder: from its `warren-index-keys`
   * header (warren's writer states them), else from the batch parsed. Every batch is indexed, trusted or
   * not: a lookup checks what it reads, and an entry too many costs a read where one too few could hide a
   * job. A header can leave out only ids of its own batch: a forger hides nothing but its own records.
   */
  private async indexRange(from: number, to: number, builder: IndexBuilder): Promise<void> {
    await this.reader.readRange(from, to, (r) => {
      builder.saw(r.offset);
      const stated = decodeKeyHashes(r.properties.headers?.[HEADERS.indexKeys]);
      if (stated !== undefined) return builder.addHashes(r.offset, stated);
      const batch = parseHistoryBatch(r.content);
      if (batch !== undefined) builder.addHashes(r.offset, jobIdsOf(batch).map(historyKeyHash));
    });
  }

  /**
   * A new base from the old base's shards, the deltas, the blocks this round made and, where those do not
   * cover the history's kept offsets, the history itself; then a checkpoint naming only it.
   */
  private async compact(
    state: IndexState,
    fresh: IndexBlock[],
    round: { first: number; end: number; startedAt: number },
  ): Promise<void> {
    const { first, end } = round;
    const merged = await this.readBack(state, round);
    for (const b of fresh) merged.add(b);
    // Whatever no block read covers (a lost shard, a delta past retention) is read from the history.
    const builder = new IndexBuilder(DELTA_BLOCK.offsets, DELTA_BLOCK.maxEntries);
    for (const gap of uncovered(merged.covered, first, end)) await this.indexRange(gap.from, gap.to, builder);
    for (const b of builder.finish()) merged.add(b);
    const { hashes, offsets } = merged;
    const n = shardCount(hashes.length);
    const shards: [number, number][][] = Array.from({ length: n }, () => []);
    for (let i = 0; i < hashes.length; i += 1) shards[hashes[i]! % n]!.push([hashes[i]!, offsets[i]!]);
    const blocks: IndexBlock[] = shards.map((entries, index) => ({
      from: first,
      to: end,
      entries,
      marks: [],
      shard: { count: n, index },
    }));
    const located = await this.appendBlocks(blocks);
    const base = { n, runs: toRuns(located), from: first, to: end };
    await this.appendCheckpoint(end, round.startedAt, { base, deltas: [] });
  }

  /**
   * The entries of the blocks the checkpoint names (a base only whole: every shard of its count over its
   * range), those of kept offsets, and the ranges they cover.
   */
  private async readBack(state: IndexState, { first, end }: { first: number; end: number }) {
    const hashes: number[] = [];
    const offsets: number[] = [];
    const covered: { from: number; to: number }[] = [];
    const take = (entries: readonly (readonly [number, number])[]) => {
      for (const [h, o] of entries)
        if (o >= first) {
          hashes.push(h);
          offsets.push(o);
        }
    };
    const add = (block: Pick<IndexBlock, 'from' | 'to' | 'entries'>) => {
      covered.push({ from: block.from, to: block.to });
      take(block.entries);
    };
    const { base } = state;
    const shardsSeen = new Set<number>();
    const old = [...(base ? expandRuns(base.runs) : []), ...state.deltas.map((d) => d[0])];
    await this.reader.readIndex(old, (r) => {
      if (!this.reader.acceptIndex(r)) return;
      const block = decodeEntries(r.content);
      if (block === undefined || block.to > end) return;
      if (block.shard === undefined) return add(block);
      if (
        base === undefined ||
        block.shard.count !== base.n ||
        block.from !== base.from ||
        block.to !== base.to
      )
        return;
      if (shardsSeen.has(block.shard.index)) return;
      shardsSeen.add(block.shard.index);
      take(block.entries);
    });
    if (base !== undefined && shardsSeen.size === base.n) covered.push({ from: base.from, to: base.to });
    return { hashes, offsets, covered, add };
  }

  /** Appends blocks to the index stream, signed and with this process's user, and returns their offsets. */
  private async appendBlocks(blocks: readonly IndexBlock[]): Promise<number[]> {
    const { openChannel, indexStream, append, username, trust } = this.deps;
    const id = `${trust.writer}.${Date.now().toString(36)}.${Math.random().toString(36).slice(2, 8)}`;
    const user = username();
    return appendAndLocate(
      openChannel,
      indexStream,
      blocks.length,
      async () => {
        // One after another, each confirmed before the next: each block then lands in a chunk of its own.
        // A read at an offset makes the broker go through the whole chunk that holds it (2.7 MB for a
        // million-event history's shards appended at once: ~20 ms a lookup, against ~1 ms for one shard).
        for (const [i, block] of blocks.entries()) {
          const content = encodeBlock(block);
          await append({
            stream: indexStream,
            content,
            contentType: 'application/octet-stream',
            headers: { ...trust.proof('history', content, 'index'), [HEADERS.indexAppend]: `${id}:${i}` },
            ...(user === undefined ? {} : { userId: user }),
          });
        }
      },
      (properties) => {
        const tag = properties.headers?.[HEADERS.indexAppend];
        if (typeof tag !== 'string' || !tag.startsWith(`${id}:`)) return undefined;
        return Number(tag.slice(id.length + 1));
      },
    );
  }

  /** A checkpoint: everything before `end + 1` is indexed; `at` is when the round began (history-indexer.ts). */
  private async appendCheckpoint(end: number, at: number, state: IndexState): Promise<void> {
    const message = this.codec.encode({ upTo: end + 1, at, guard: null, state });
    if (message === undefined) return;
    await this.deps.append({
      stream: this.deps.checkpointStream,
      content: message.content,
      contentType: 'application/json',
      headers: message.headers,
      ...(message.userId === undefined ? {} : { userId: message.userId }),
    });
  }
}
