/**
 * The offset index of a stream (a contract: docs/guide/dead-letters.md, docs/guide/job-control.md). A
 * stream read over AMQP 0-9-1 delivers some 27,000 records a second at best, so a query that must read a
 * log of a million records takes most of a minute; the offset index says which offsets can hold a key, so a
 * fresh process reads only those. It lives in a stream of its own beside the indexed one, one record per
 * block of consecutive offsets, binary:
 *
 *   "WIX1" | from: f64 | to: f64 | entries: u32 | marks: u32 | entries × (hash u32, offset − from u32)
 *          | marks × (offset − from u32)
 *
 * An entry says "the record at this offset may hold a key whose hash is this" (keyHash: 32 bits of
 * SHA-256); a mark names an offset every query must read (the dead-letter log's markers). A block covers
 * `from`..`to` inclusive whether or not each offset has an entry. Blocks are written by whoever read the
 * records (a query that scanned the unindexed tail), signed like every record warren writes for itself. The
 * index is a hint: every answer is checked against the record it points at, so a forged or wrong entry costs
 * a read and never an answer; only an index that omits a record could hide it, which a signing key rules out
 * (without a key, whoever may write the stream could as well have written false records).
 */
import { createHash } from 'node:crypto';

const MAGIC = Buffer.from('WIX1');
/**
 * A shard of a compacted index (the history's base, docs/operating/cli.md, "How a lookup reads"): `"WIS1" | shards: u16 |
 * shard: u16` before a block as above, holding only the keys whose hash modulo `shards` is `shard`.
 */
const SHARD_MAGIC = Buffer.from('WIS1');
const SHARD_HEAD = 8;
const HEAD = 4 + 8 + 8 + 4 + 4;
/** Shards a compacted index may have at most (a u16 on the wire). */
export const MAX_INDEX_SHARDS = 4096;
/** A block with more than this many entries is not warren's (it writes far fewer). */
export const MAX_INDEX_ENTRIES = 1_000_000;
/** A block spanning more offsets than this is not warren's. */
export const MAX_BLOCK_SPAN = 1_000_000;

export interface IndexBlock {
  readonly from: number;
  readonly to: number;
  /** hash, offset pairs. */
  readonly entries: readonly (readonly [number, number])[];
  readonly marks: readonly number[];
  /** A shard of a compacted index: only keys whose hash modulo `count` is `index`. */
  readonly shard?: { readonly count: number; readonly index: number };
}

/** What {@link decodeBlock} reads of a block for one key hash. */
export interface DecodedBlock {
  readonly from: number;
  readonly to: number;
  readonly offsets: number[];
  readonly marks: number[];
  readonly shard?: { readonly count: number; readonly index: number };
}

/** 32 bits of SHA-256 of a key (`j:<job id>`, `r:<reason>`, `f:<path>=<value>`). */
export function keyHash(key: string): number {
  return createHash('sha256').update(key).digest().readUInt32BE(0);
}

export function encodeBlock(block: IndexBlock): Buffer {
  const pre = block.shard === undefined ? 0 : SHARD_HEAD;
  const out = Buffer.alloc(pre + HEAD + block.entries.length * 8 + block.marks.length * 4);
  if (block.shard !== undefined) {
    SHARD_MAGIC.copy(out, 0);
    out.writeUInt16BE(block.shard.count, 4);
    out.writeUInt16BE(block.shard.index, 6);
  }
  MAGIC.copy(out, pre);
  out.writeDoubleBE(block.from, pre + 4);
  out.writeDoubleBE(block.to, pre + 12);
  out.writeUInt32BE(block.entries.length, pre + 20);
  out.writeUInt32BE(block.marks.length, pre + 24);
  let at = pre + HEAD;
  for (const [hash, offset] of block.entries) {
    out.writeUInt32BE(hash >>> 0, at);
    out.writeUInt32BE(offset - block.from, at + 4);
    at += 8;
  }
  for (const offset of block.marks) {
    out.writeUInt32BE(offset - block.from, at);
    at += 4;
  }
  return out;
}

/** A block's header, checked: undefined when the bytes are not a block (a size or span no writer makes). */
function blockHeader(content: Buffer) {
  if (content.length < HEAD) return undefined;
  let pre = 0;
  let shard: { count: number; index: number } | undefined;
  if (content.subarray(0, 4).equals(SHARD_MAGIC)) {
    pre = SHARD_HEAD;
    shard = { count: content.readUInt16BE(4), index: content.readUInt16BE(6) };
    if (shard.count < 1 || shard.count > MAX_INDEX_SHARDS || shard.index >= shard.count) return undefined;
    if (content.length < pre + HEAD || !content.subarray(pre, pre + 4).equals(MAGIC)) return undefined;
  } else if (!content.subarray(0, 4).equals(MAGIC)) return undefined;
  const from = content.readDoubleBE(pre + 4);
  const to = content.readDoubleBE(pre + 12);
  const entries = content.readUInt32BE(pre + 20);
  const marks = content.readUInt32BE(pre + 24);
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || to < from) return undefined;
  // A shard spans the whole compacted range (its deltas are u32); a block its few thousand offsets.
  const maxSpan = shard === undefined ? MAX_BLOCK_SPAN : 0xffff_ffff;
  if (to - from > maxSpan || entries > MAX_INDEX_ENTRIES || marks > MAX_INDEX_ENTRIES) return undefined;
  if (content.length !== pre + HEAD + entries * 8 + marks * 4) return undefined;
  return { at: pre + HEAD, from, to, entries, marks, shard };
}

/** Reads a block's marks (after its entries); undefined when one lies outside its range. */
function readMarks(
  content: Buffer,
  at: number,
  count: number,
  from: number,
  span: number,
): number[] | undefined {
  const marked: number[] = [];
  for (let i = 0; i < count; i += 1, at += 4) {
    const delta = content.readUInt32BE(at);
    if (delta > span) return undefined;
    marked.push(from + delta);
  }
  return marked;
}

/**
 * The entries of a block matching `hash`, its marks and its range; undefined when the bytes are not a
 * block (wrong size, offsets outside its range, a span or count no writer makes).
 */
export function decodeBlock(content: Buffer, hash: number | undefined): DecodedBlock | undefined {
  const head = blockHeader(content);
  if (head === undefined) return undefined;
  const { from, to, shard } = head;
  const span = to - from;
  const offsets: number[] = [];
  let at = head.at;
  // A lookup scans hundreds of thousands of entries: compare the hash's first byte before reading the
  // word (255 in 256 entries differ there), which takes a million-event history's index from ~9 ms to ~1.
  const first = hash === undefined ? -1 : hash >>> 24;
  for (let i = 0; i < head.entries; i += 1, at += 8) {
    if (first >= 0 && (content[at] !== first || content.readUInt32BE(at) !== hash)) continue;
    const delta = content.readUInt32BE(at + 4);
    if (delta > span) return undefined;
    offsets.push(from + delta);
  }
  const marks = readMarks(content, at, head.marks, from, span);
  if (marks === undefined) return undefined;
  return { from, to, offsets, marks, ...(shard === undefined ? {} : { shard }) };
}

/** Every entry of a block (for merging blocks into a compacted index); undefined when it is not a block. */
export function decodeEntries(content: Buffer): IndexBlock | undefined {
  const head = blockHeader(content);
  if (head === undefined) return undefined;
  const { from, to, shard } = head;
  const span = to - from;
  const entries: [number, number][] = [];
  let at = head.at;
  for (let i = 0; i < head.entries; i += 1, at += 8) {
    const delta = content.readUInt32BE(at + 4);
    if (delta > span) return undefined;
    entries.push([content.readUInt32BE(at), from + delta]);
  }
  const marks = readMarks(content, at, head.marks, from, span);
  if (marks === undefined) return undefined;
  return { from, to, entries, marks, ...(shard === undefined ? {} : { shard }) };
}

/**
 * Builds blocks while a reader goes through unindexed records in offset order: `add` the keys of each
 * record, `mark` what every query must read; a block closes every `blockSize` offsets (and at `finish`).
 */
export class IndexBuilder {
  private from: number | undefined;
  private last = -1;
  private entries: [number, number][] = [];
  private marks: number[] = [];
  readonly blocks: IndexBlock[] = [];

  constructor(
    private readonly blockSize: number,
    private readonly maxEntries = 100_000,
    /** Each block as it closes (then not kept in `blocks`): a long read holds one block, not all. */
    private readonly onBlock?: (block: IndexBlock) => void,
  ) {}

  /** A record read (whatever it holds): the block covers it. */
  saw(offset: number): void {
    if (
      this.from !== undefined &&
      (offset - this.from >= this.blockSize || this.entries.length >= this.maxEntries)
    )
      this.close();
    this.from ??= offset;
    this.last = offset;
  }

  add(offset: number, keys: Iterable<string>): void {
    const hashes: number[] = [];
    for (const key of keys) hashes.push(keyHash(key));
    this.addHashes(offset, hashes);
  }

  /** The record at `offset` may hold keys of these hashes (a caller that hashes its keys its own way). */
  addHashes(offset: number, hashes: Iterable<number>): void {
    const seen = new Set<number>();
    for (const hash of hashes) {
      if (seen.has(hash)) continue;
      seen.add(hash);
      this.entries.push([hash >>> 0, offset]);
    }
  }

  mark(offset: number): void {
    this.marks.push(offset);
  }

  /** Closes the open block, up to the last record seen. */
  finish(): IndexBlock[] {
    this.close();
    return this.blocks;
  }

  private close(): void {
    if (this.from === undefined) return;
    const block = { from: this.from, to: this.last, entries: this.entries, marks: this.marks };
    if (this.onBlock) this.onBlock(block);
    else this.blocks.push(block);
    this.from = undefined;
    this.entries = [];
    this.marks = [];
  }
}

/**
 * The offsets `[first, end]` that no block covers, as inclusive ranges in order: what a query must read
 * itself (usually the tail written since the last indexed read).
 */
export function uncovered(
  blocks: readonly { from: number; to: number }[],
  first: number,
  end: number,
): { from: number; to: number }[] {
  const sorted = [...blocks].sort((a, b) => a.from - b.from);
  const gaps: { from: number; to: number }[] = [];
  let next = first;
  for (const b of sorted) {
    if (b.to < next) continue;
    if (b.from > next) gaps.push({ from: next, to: Math.min(b.from - 1, end) });
    next = Math.max(next, b.to + 1);
    if (next > end) break;
  }
  if (next <= end) gaps.push({ from: next, to: end });
  return gaps.filter((g) => g.from <= g.to);
}
