/**
 * The history's offset index, kept current in the background (a contract: docs/operating/cli.md, "How a lookup reads").
 * Two streams beside the history:
 * - the **index stream** holds blocks (streams/offset-index.ts): *deltas*, each covering a run of history
 *   offsets with every job id in it (`WIX1`), and a *base*, the compacted index of everything before the
 *   deltas split into `n` shards by key hash (`WIS1`, shard `hash mod n`), so a lookup reads one shard;
 * - the **checkpoint stream** holds checkpoints (records/checkpoint-codec.ts, of the history's stream): the
 *   history offset everything before is indexed (`upTo`), the index offsets of the base's shards and of the
 *   deltas since it (state {@link IndexState}).
 * A lookup reads the newest checkpoint (the first it can trust in the stream's last chunk), the one shard
 * and the deltas it names, the history's last chunk (which gives its end) and the batches the entries name.
 * An indexing round reads the history from the checkpoint's `upTo` to its end, appends a delta (or, when the
 * deltas grow past {@link COMPACT_ENTRIES} entries or {@link COMPACT_DELTAS} blocks, a new base) and then a
 * checkpoint.
 *
 * Trust: index records and checkpoints are taken only when the broker vouches for their writer (their
 * `user_id` is this process's user; RabbitMQ refuses a publish naming another) and, with a signing key, when
 * signed. What a lookup covers is what the blocks it read say, never what a checkpoint claims: a checkpoint
 * pointing at a wrong record leaves a gap, which the lookup reads from the history itself. Every event shown
 * comes from a batch read, proven and matched by job id there: a wrong entry costs a read, never an answer.
 */
import type * as amqp from 'amqplib';
import { CheckpointCodec, type Checkpoint } from '../records';
import {
  decodeBlock,
  newestRecord,
  LAST_CHUNK_PREFETCH,
  openReadChannel,
  ReadChannels,
  readLastChunk,
  readOffsets,
  readStream,
  uncovered,
  type StreamRecord,
} from '../streams';
import { IndexRound, type IndexReader } from './index-round';
import { isVouched } from './lookup-protocol';
import {
  historyKeyHash,
  isStale,
  parseIndexState,
  shardOffset,
  type HistoryIndexDeps,
  type IndexState,
} from './index-state';

export type { AppendRecord, HistoryIndexDeps } from './index-state';

/**
 * How long a lookup waits for the newest checkpoint before taking the checkpoint stream for empty, ms. Only
 * a stream declared a moment before its first checkpoint is empty; a broker slow to answer (a cold read took
 * 130 ms at p99 on a machine at load 14, issue 33) is not, and taking it for empty made a lookup index the
 * whole history itself (10 s for a million events). A round keeps newestRecord's short wait: it reads the
 * checkpoint right after declaring the stream, empty the first time.
 */
const CHECKPOINT_FIRST_WAIT_MS = 2000;

/** A lookup that would read more history than this itself (offsets no block covers) indexes first. */
export const LOOKUP_INDEXES_ABOVE = 16;

/** A block a reader took, with what it covers. */
interface TakenBlock {
  readonly from: number;
  readonly to: number;
  readonly offsets: readonly number[];
}

/** What a lookup learnt before reading what no block covers. */
interface LookupView {
  /** The history's last offset; undefined: it is empty. */
  readonly end: number | undefined;
  /** The records of its last chunk. */
  readonly last: readonly StreamRecord[];
  /** Offsets no trusted block covers. */
  readonly gaps: readonly { from: number; to: number }[];
  /** Offsets the checkpoint says its blocks cover, and those the blocks read do cover. */
  readonly claimed: number;
  readonly verified: number;
  /** The reads of the batches the blocks name. */
  readonly named: Promise<void>;
}

/** One process's view of the history's index: lookups through it and indexing rounds. */
export class HistoryIndex implements IndexReader {
  private readonly codec: CheckpointCodec;
  private readonly rounds: IndexRound;
  private running: Promise<void> | undefined;

  constructor(private readonly deps: HistoryIndexDeps) {
    this.codec = new CheckpointCodec(deps.trust, deps.stream, deps.username);
    this.rounds = new IndexRound(deps, this.codec, this);
  }

  /** Whether this process can trust index records (a known broker user, or a signing key). */
  get isUsable(): boolean {
    return this.codec.isUsable;
  }

  /**
   * Hands `visit` every history record that may hold events of the key's job: the batches the index names
   * (read as soon as their block arrives) and every offset no trusted block covers (the tail since the newest
   * checkpoint, mostly in the history's last chunk, which gives the end; and any gap). When that part is
   * large (the history was written with nobody indexing it), indexes it first, once. A record may be handed
   * over twice (a batch named by the index in the last chunk): the caller keeps each offset once.
   */
  async lookUp(jobId: string, visit: (record: StreamRecord) => void): Promise<void> {
    const { openChannel } = this.deps;
    // All opened at once, the chain's first: the checkpoint, the shard it names and a batch the shard names
    // are read on one kept channel in turn (read-channels.ts); the history's last chunk beside them; a spare
    // for the deltas, read beside the shard.
    const channels = new ReadChannels(openChannel, 1);
    let lastChannel: Promise<amqp.Channel> | undefined = openReadChannel(openChannel, LAST_CHUNK_PREFETCH);
    lastChannel.catch(() => undefined);
    channels.openSpares(1);
    const forLast = () => {
      const taken = lastChannel ?? openChannel();
      lastChannel = undefined;
      return taken;
    };
    const hash = historyKeyHash(jobId);
    try {
      let view = await this.view(hash, channels.open, forLast, visit);
      if (view.end !== undefined && outsideLast(view) > LOOKUP_INDEXES_ABOVE) {
        await view.named;
        await this.round(view.claimed > view.verified).catch(() => undefined);
        view = await this.view(hash, channels.open, forLast, visit);
      }
      await Promise.all([view.named, view.end === undefined ? undefined : this.readUncovered(view, visit)]);
    } finally {
      channels.close();
      if (lastChannel !== undefined) void lastChannel.then((c) => c.close()).catch(() => undefined);
    }
  }

  /** Hands over the last chunk's uncovered records and reads the other uncovered offsets. */
  private async readUncovered(view: LookupView, visit: (record: StreamRecord) => void): Promise<void> {
    const { end, last, gaps } = view;
    const lastFrom = last[0]?.offset ?? (end ?? 0) + 1;
    for (const r of last) if (gaps.some((g) => r.offset >= g.from && r.offset <= g.to)) visit(r);
    const reads: Promise<void>[] = [];
    for (const gap of gaps) {
      const to = Math.min(gap.to, lastFrom - 1);
      if (gap.from <= to) reads.push(this.readRange(gap.from, to, visit));
    }
    await Promise.all(reads);
  }

  /**
   * One indexing round: reads what the newest checkpoint does not cover up to the history's end, appends a
   * delta (or compacts into a new base), then a checkpoint. `rebuild` compacts whatever the deltas hold,
   * reading the blocks back and the history where they do not cover what the checkpoint claimed. One round
   * at a time per process; a failure is thrown (the caller decides whether it matters).
   */
  round(rebuild = false): Promise<void> {
    if (!this.codec.isUsable) return Promise.resolve();
    this.running ??= this.rounds.run(rebuild).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Waits for a round in progress (a close must not cut its appends short). */
  async settled(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  /** The newest checkpoint this process can trust (the first one in the last chunk), or undefined. */
  async checkpoint(
    openChannel = this.deps.openChannel,
    firstWaitMs?: number,
  ): Promise<(Checkpoint & { state: IndexState }) | undefined> {
    if (!this.codec.isUsable) return undefined;
    return newestRecord(
      openChannel,
      this.deps.checkpointStream,
      (r) => {
        const c = this.codec.decode(r.content, r.properties);
        const state = c === undefined ? undefined : parseIndexState(c.state);
        return c === undefined || state === undefined ? undefined : { ...c, state };
      },
      true,
      firstWaitMs,
    ).catch(() => undefined);
  }

  /**
   * The checkpoint, the history's last chunk (its end) and the blocks for one key hash; the batches the
   * blocks name are read to `visit` as each block arrives (`named`), beside the wait for the end.
   */
  private async view(
    hash: number,
    channel: () => Promise<amqp.Channel>,
    forLast: () => Promise<amqp.Channel>,
    visit: (record: StreamRecord) => void,
  ): Promise<LookupView> {
    const { stream, idleMs } = this.deps;
    const cpP = this.checkpoint(channel, CHECKPOINT_FIRST_WAIT_MS);
    const lastP = readLastChunk(forLast, stream, idleMs);
    lastP.catch(() => undefined);
    const cp = await cpP;
    const blocks: TakenBlock[] = [];
    const named: Promise<void>[] = [];
    const take = (r: StreamRecord, shard?: { count: number; index: number }) => {
      if (!this.acceptIndex(r)) return;
      const block = decodeBlock(r.content, hash);
      if (block === undefined) return;
      if (shard && (block.shard?.count !== shard.count || block.shard.index !== shard.index)) return;
      if (!shard && block.shard !== undefined) return;
      blocks.push(block);
      if (block.offsets.length > 0) named.push(readOffsets(channel, stream, block.offsets, idleMs, visit));
    };
    const reads: Promise<void>[] = [];
    const base = cp?.state.base;
    let claimed = 0;
    if (base !== undefined) {
      const shard = { count: base.n, index: hash % base.n };
      const at = shardOffset(base.runs, shard.index);
      if (at !== undefined) reads.push(this.readIndex([at], (r) => take(r, shard), channel));
      claimed += base.to - base.from + 1;
    }
    if (cp !== undefined && cp.state.deltas.length > 0) {
      const offsets = cp.state.deltas.map((d) => d[0]);
      reads.push(this.readIndex(offsets, (r) => take(r), channel));
      for (const d of cp.state.deltas) claimed += d[2] - d[1] + 1;
    }
    const [last] = await Promise.all([lastP, ...reads]);
    const all = Promise.all(named).then(() => undefined);
    all.catch(() => undefined);
    const end = last.end;
    if (end === undefined) return { end, last: [], gaps: [], claimed, verified: 0, named: all };
    // A checkpoint past the end is of a stream deleted and declared again since: its blocks say nothing.
    if (cp !== undefined && isStale(cp, end)) blocks.length = 0;
    // Nothing before a trusted base's first offset is kept (it began at the first kept record); without
    // one, a gap from 0 is read from the stream's first record.
    const first = Math.min(base?.from ?? 0, end);
    let verified = 0;
    for (const b of blocks) verified += b.to - b.from + 1;
    return { end, last: last.records, gaps: uncovered(blocks, first, end), claimed, verified, named: all };
  }

  /** Reads index records at the given offsets (several at once), each to `visit`. */
  readIndex(
    offsets: readonly number[],
    visit: (r: StreamRecord) => void,
    openChannel = this.deps.openChannel,
  ): Promise<void> {
    return readOffsets(openChannel, this.deps.indexStream, offsets, this.deps.idleMs, visit).catch(
      () => undefined,
    );
  }

  /** Reads history offsets `from..to` (inclusive) to `visit`. */
  async readRange(from: number, to: number, visit: (r: StreamRecord) => void): Promise<void> {
    await readStream(
      this.deps.openChannel,
      this.deps.stream,
      from,
      { max: Number.POSITIVE_INFINITY, until: to, idleMs: Math.max(this.deps.idleMs, 5000), prefetch: 1000 },
      visit,
    );
  }

  /** An index record whose writer the broker (`user_id`) and, with a key, the signature vouch for. */
  acceptIndex(r: StreamRecord): boolean {
    return isVouched(this.deps.trust, 'history', this.deps.username(), r, 'index', {
      stream: this.deps.indexStream,
      offset: r.offset,
    });
  }
}

/** History offsets a lookup would read itself outside the last chunk (which it has read already). */
function outsideLast(view: {
  gaps: readonly { from: number; to: number }[];
  last: readonly StreamRecord[];
}): number {
  const lastFrom = view.last[0]?.offset ?? Number.POSITIVE_INFINITY;
  let n = 0;
  for (const g of view.gaps) n += Math.max(0, Math.min(g.to, lastFrom - 1) - g.from + 1);
  return n;
}
