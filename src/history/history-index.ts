/**
 * The history's offset index, kept current in the background (a contract: docs/guide/history.md#the-index).
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
import { CheckpointCodec, type Checkpoint, type RecordTrust } from '../records';
import {
  appendAndLocate,
  decodeBlock,
  decodeEntries,
  encodeBlock,
  firstOffset,
  IndexBuilder,
  keyHash,
  lastOffset,
  MAX_INDEX_SHARDS,
  newestRecord,
  openReadChannel,
  readLastChunk,
  readOffsets,
  readStream,
  uncovered,
  type IndexBlock,
  type StreamRecord,
} from '../streams';
import { HEADERS } from '../message';
import { parseHistoryBatch } from './history-batch';

/** A delta block covers at most this many history offsets (batches), and holds at most this many entries. */
const DELTA_BLOCK = { offsets: 1024, maxEntries: 20_000 };
/** The deltas are compacted into a new base past this many entries (8 bytes each)... */
export const COMPACT_ENTRIES = 65_536;
/** ...or this many delta blocks. */
export const COMPACT_DELTAS = 128;
/** A base shard holds about this many entries (a lookup reads one shard: ~32 kB). */
const SHARD_ENTRIES = 4096;
/** A lookup that would read more history than this itself (offsets no block covers) indexes first. */
export const LOOKUP_INDEXES_ABOVE = 16;
/** The header that tells an index record of one append from the others while it is located. */
const APPEND_HEADER = 'warren-index-append';

/** What a checkpoint of the history's index says beside `upTo`. */
export interface IndexState {
  /** The compacted base: `n` shards at index offsets given as runs `[first offset, count]`, covering `from..to`. */
  readonly base?: {
    readonly n: number;
    readonly runs: readonly (readonly [number, number])[];
    readonly from: number;
    readonly to: number;
  };
  /** The delta blocks since the base: `[index offset, from, to, entries]`. */
  readonly deltas: readonly (readonly [number, number, number, number])[];
}

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

/** Appends one record to a stream, confirmed; `userId` is the connection's user when known. */
export type AppendRecord = (message: {
  readonly stream: string;
  readonly content: Buffer;
  readonly contentType: string;
  readonly headers: Record<string, string>;
  readonly userId?: string;
}) => Promise<void>;

export interface HistoryIndexDeps {
  readonly openChannel: () => Promise<amqp.Channel>;
  /** The history stream. */
  readonly stream: string;
  readonly indexStream: string;
  readonly checkpointStream: string;
  readonly idleMs: number;
  readonly trust: RecordTrust;
  /** The broker user of this process's connection, when known (EXTERNAL authentication: not). */
  readonly username: () => string | undefined;
  readonly append: AppendRecord;
  /** Declares the index and checkpoint streams (before this process's first append to them). */
  readonly declareStreams: () => Promise<void>;
}

/** One process's view of the history's index: lookups through it and indexing rounds. */
export class HistoryIndex {
  private readonly codec: CheckpointCodec;
  private running: Promise<void> | undefined;
  private declared: Promise<void> | undefined;

  constructor(private readonly deps: HistoryIndexDeps) {
    this.codec = new CheckpointCodec(deps.trust, deps.stream, deps.username);
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
    const hash = keyHash(`j:${jobId}`);
    // Opened while the checkpoint is read: for the shard and the deltas it names, and the batch they name.
    const spares = [0, 1, 2].map(() => openReadChannel(this.deps.openChannel, 1));
    for (const s of spares) s.catch(() => undefined);
    const spare = () => spares.shift() ?? this.deps.openChannel();
    try {
      let view = await this.view(hash, spare, visit);
      if (view.end !== undefined && outsideLast(view) > LOOKUP_INDEXES_ABOVE) {
        await view.named;
        await this.round(view.claimed > view.verified).catch(() => undefined);
        view = await this.view(hash, spare, visit);
      }
      await Promise.all([view.named, view.end === undefined ? undefined : this.readUncovered(view, visit)]);
    } finally {
      for (const s of spares) void s.then((c) => c.close()).catch(() => undefined);
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
    this.running ??= this.indexRound(rebuild).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Waits for a round in progress (a close must not cut its appends short). */
  async settled(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  /** The newest checkpoint this process can trust (the first one in the last chunk), or undefined. */
  async checkpoint(): Promise<(Checkpoint & { state: IndexState }) | undefined> {
    if (!this.codec.isUsable) return undefined;
    return newestRecord(
      this.deps.openChannel,
      this.deps.checkpointStream,
      (r) => {
        const c = this.codec.decode(r.content, r.properties);
        const state = c === undefined ? undefined : parseIndexState(c.state);
        return c === undefined || state === undefined ? undefined : { ...c, state };
      },
      true,
    ).catch(() => undefined);
  }

  /**
   * The checkpoint, the history's last chunk (its end) and the blocks for one key hash; the batches the
   * blocks name are read to `visit` as each block arrives (`named`), beside the wait for the end.
   */
  private async view(
    hash: number,
    spare: () => Promise<amqp.Channel>,
    visit: (record: StreamRecord) => void,
  ): Promise<LookupView> {
    const { stream, idleMs } = this.deps;
    const lastP = readLastChunk(this.deps.openChannel, stream, idleMs);
    lastP.catch(() => undefined);
    const cp = await this.checkpoint();
    const blocks: TakenBlock[] = [];
    const named: Promise<void>[] = [];
    const take = (r: StreamRecord, shard?: { count: number; index: number }) => {
      if (!this.acceptIndex(r)) return;
      const block = decodeBlock(r.content, hash);
      if (block === undefined) return;
      if (shard && (block.shard?.count !== shard.count || block.shard.index !== shard.index)) return;
      if (!shard && block.shard !== undefined) return;
      blocks.push(block);
      if (block.offsets.length > 0) named.push(readOffsets(spare, stream, block.offsets, idleMs, visit));
    };
    const reads: Promise<void>[] = [];
    const base = cp?.state.base;
    let claimed = 0;
    if (base !== undefined) {
      const shard = { count: base.n, index: hash % base.n };
      const at = shardOffset(base.runs, shard.index);
      if (at !== undefined) reads.push(this.readIndex([at], (r) => take(r, shard), spare));
      claimed += base.to - base.from + 1;
    }
    if (cp !== undefined && cp.state.deltas.length > 0) {
      const offsets = cp.state.deltas.map((d) => d[0]);
      reads.push(this.readIndex(offsets, (r) => take(r), spare));
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
  private readIndex(
    offsets: readonly number[],
    visit: (r: StreamRecord) => void,
    openChannel = this.deps.openChannel,
  ): Promise<void> {
    return readOffsets(openChannel, this.deps.indexStream, offsets, this.deps.idleMs, visit).catch(
      () => undefined,
    );
  }

  /** Reads history offsets `from..to` (inclusive) to `visit`. */
  private async readRange(from: number, to: number, visit: (r: StreamRecord) => void): Promise<void> {
    await readStream(
      this.deps.openChannel,
      this.deps.stream,
      from,
      { max: Number.POSITIVE_INFINITY, until: to, idleMs: Math.max(this.deps.idleMs, 5000), prefetch: 1000 },
      visit,
    );
  }

  /** An index record whose writer the broker (`user_id`) and, with a key, the signature vouch for. */
  private acceptIndex(r: StreamRecord): boolean {
    const user = this.deps.username();
    if (user === undefined && !this.deps.trust.isSigning) return false;
    if (user !== undefined && r.properties.userId !== user) return false;
    if (this.deps.trust.isSigning && r.properties.headers?.[HEADERS.proof] === undefined) return false;
    return this.deps.trust.check('history', r.content, r.properties.headers, 'index', undefined, {
      stream: this.deps.indexStream,
      offset: r.offset,
    });
  }

  private async indexRound(rebuild: boolean): Promise<void> {
    if (!this.codec.isUsable) return;
    const { openChannel, stream, idleMs } = this.deps;
    this.declared ??= this.deps.declareStreams().catch((error: unknown) => {
      this.declared = undefined;
      throw error;
    });
    await this.declared;
    const startedAt = Date.now();
    const [cp, first, end] = await Promise.all([
      this.checkpoint(),
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

  /** Reads the history `from..to` and adds each batch's job ids to the builder. */
  private async indexRange(from: number, to: number, builder: IndexBuilder): Promise<void> {
    await this.readRange(from, to, (r) => {
      builder.saw(r.offset);
      // Every batch that parses is indexed, trusted or not: a lookup checks what it reads, and an entry
      // too many costs a read where one too few could hide a job.
      const batch = parseHistoryBatch(r.content);
      if (batch !== undefined) builder.add(r.offset, jobKeys(batch));
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
    const hashes: number[] = [];
    const offsets: number[] = [];
    const covered: { from: number; to: number }[] = [];
    const add = (
      block: IndexBlock | { from: number; to: number; entries: readonly (readonly [number, number])[] },
    ) => {
      covered.push({ from: block.from, to: block.to });
      for (const [h, o] of block.entries)
        if (o >= first) {
          hashes.push(h);
          offsets.push(o);
        }
    };
    const old = [...(state.base ? expandRuns(state.base.runs) : []), ...state.deltas.map((d) => d[0])];
    const baseShards = state.base?.n;
    const shardsSeen = new Set<number>();
    await this.readIndex(old, (r) => {
      if (!this.acceptIndex(r)) return;
      const block = decodeEntries(r.content);
      if (block === undefined || block.to > end) return;
      // a base counts only whole: every shard of the same count over the same range
      if (block.shard !== undefined) {
        if (block.shard.count !== baseShards || block.from !== state.base?.from || block.to !== state.base.to)
          return;
        if (shardsSeen.has(block.shard.index)) return;
        shardsSeen.add(block.shard.index);
        for (const [h, o] of block.entries)
          if (o >= first) {
            hashes.push(h);
            offsets.push(o);
          }
        return;
      }
      add(block);
    });
    if (state.base !== undefined && shardsSeen.size === baseShards)
      covered.push({ from: state.base.from, to: state.base.to });
    for (const b of fresh) add(b);
    // Whatever no block read covers (a lost shard, a delta past retention) is read from the history.
    const builder = new IndexBuilder(DELTA_BLOCK.offsets, DELTA_BLOCK.maxEntries);
    for (const gap of uncovered(covered, first, end)) await this.indexRange(gap.from, gap.to, builder);
    for (const b of builder.finish()) add(b);
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
            headers: { ...trust.proof('history', content, 'index'), [APPEND_HEADER]: `${id}:${i}` },
            ...(user === undefined ? {} : { userId: user }),
          });
        }
      },
      (properties) => {
        const tag = properties.headers?.[APPEND_HEADER];
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

/** A checkpoint that claims more than the stream holds: written before it was deleted and declared again. */
function isStale(cp: Checkpoint, end: number): boolean {
  return cp.upTo > end + 1;
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

/** The index keys of a batch: each job id it holds events of, once. */
export function jobKeys(batch: { readonly e: readonly unknown[] }): string[] {
  const jobs = new Set<string>();
  for (const e of batch.e)
    if (e !== null && typeof e === 'object' && typeof (e as { j?: unknown }).j === 'string')
      jobs.add(`j:${(e as { j: string }).j}`);
  return [...jobs];
}

/** Shards for a base of this many entries: a power of two, about SHARD_ENTRIES each. */
function shardCount(entries: number): number {
  let n = 1;
  while (n < MAX_INDEX_SHARDS && entries / n > SHARD_ENTRIES) n *= 2;
  return n;
}

function toRuns(offsets: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const o of offsets) {
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === o) last[1] += 1;
    else runs.push([o, 1]);
  }
  return runs;
}

function expandRuns(runs: readonly (readonly [number, number])[]): number[] {
  const out: number[] = [];
  for (const [o, n] of runs) for (let i = 0; i < n; i += 1) out.push(o + i);
  return out;
}

/** The index offset of shard `index` (the runs list the shards in order). */
function shardOffset(runs: readonly (readonly [number, number])[], index: number): number | undefined {
  let left = index;
  for (const [o, n] of runs) {
    if (left < n) return o + left;
    left -= n;
  }
  return undefined;
}

const isOffset = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/** A checkpoint's state, its shape and bounds checked; undefined when it is not one. */
export function parseIndexState(raw: unknown): IndexState | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const s = raw as { base?: unknown; deltas?: unknown };
  if (!Array.isArray(s.deltas) || s.deltas.length > COMPACT_DELTAS * 8) return undefined;
  const deltas: [number, number, number, number][] = [];
  for (const d of s.deltas) {
    if (!Array.isArray(d) || d.length !== 4 || !d.every(isOffset) || d[2] < d[1]) return undefined;
    deltas.push([d[0], d[1], d[2], d[3]]);
  }
  if (s.base === undefined) return { deltas };
  const b = s.base as { n?: unknown; runs?: unknown; from?: unknown; to?: unknown };
  if (!Number.isSafeInteger(b.n) || (b.n as number) < 1 || (b.n as number) > MAX_INDEX_SHARDS)
    return undefined;
  if (!isOffset(b.from) || !isOffset(b.to) || b.to < b.from || !Array.isArray(b.runs)) return undefined;
  const runs: [number, number][] = [];
  let total = 0;
  for (const r of b.runs) {
    if (!Array.isArray(r) || r.length !== 2 || !isOffset(r[0]) || !isOffset(r[1]) || r[1] < 1)
      return undefined;
    runs.push([r[0], r[1]]);
    total += r[1];
  }
  if (total !== b.n) return undefined;
  return { base: { n: b.n as number, runs, from: b.from, to: b.to }, deltas };
}
