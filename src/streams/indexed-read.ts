import type * as amqp from 'amqplib';
import { decodeBlock, encodeBlock, IndexBuilder, uncovered } from './offset-index';
import { firstOffset, lastOffset, readStream, readToEnd, type StreamRecord } from './stream-reader';

/** A stream and its offset index, as a reader through the index sees them. */
export interface IndexedStream {
  readonly openChannel: () => Promise<amqp.Channel>;
  readonly stream: string;
  /** The offset index's stream (declared). */
  readonly indexStream: string;
  readonly idleMs: number;
  /** Whether an index record carries a valid proof (the caller's record codec); false skips it. */
  readonly acceptIndex: (record: StreamRecord) => boolean;
  /** Counts an index record that is not a block. */
  readonly skipIndex: (record: StreamRecord) => void;
  /** Appends one block, signed (best effort: a failed append costs the next reader a longer read). */
  readonly appendIndex: (content: Buffer) => Promise<void>;
}

/** What the index says of one key, within the stream's kept offsets. */
export interface IndexLookup {
  readonly first: number;
  readonly end: number;
  readonly blocks: readonly { readonly from: number; readonly to: number }[];
  /** Offsets that may hold the key. */
  readonly candidates: Set<number>;
  /** Offsets every query must read. */
  readonly marks: Set<number>;
}

/**
 * Reads the whole index for one key hash, beside the stream's first and last offsets (all three at once);
 * undefined when the stream is empty. Candidates and marks outside the kept offsets are dropped: a forged
 * entry past the end would otherwise cost a read that waits for a record that never comes.
 */
export async function lookUpIndex(s: IndexedStream, hash: number): Promise<IndexLookup | undefined> {
  const blocks: { from: number; to: number }[] = [];
  const candidates = new Set<number>();
  const marks = new Set<number>();
  const [, first, end] = await Promise.all([
    readToEnd(s.openChannel, s.indexStream, 'first', { idleMs: s.idleMs, prefetch: 200 }, (r) => {
      if (!s.acceptIndex(r)) return;
      const block = decodeBlock(r.content, hash);
      if (block === undefined) return s.skipIndex(r);
      blocks.push(block);
      for (const o of block.offsets) candidates.add(o);
      for (const o of block.marks) marks.add(o);
    }),
    firstOffset(s.openChannel, s.stream, s.idleMs),
    lastOffset(s.openChannel, s.stream, s.idleMs),
  ]);
  if (first === undefined || end === undefined) return undefined;
  const kept = (o: number) => o >= first && o <= end;
  return {
    first,
    end,
    blocks,
    candidates: new Set([...candidates].filter(kept)),
    marks: new Set([...marks].filter(kept)),
  };
}

/**
 * Reads every kept offset no block covers (usually the tail since the last indexed read), handing each
 * record to `visit` with the builder of its block, and appends the blocks it made.
 */
export async function indexGaps(
  s: IndexedStream,
  found: IndexLookup,
  block: { readonly offsets: number; readonly maxEntries?: number },
  visit: (record: StreamRecord, builder: IndexBuilder) => void,
): Promise<void> {
  for (const gap of uncovered(found.blocks, found.first, found.end)) {
    const builder = new IndexBuilder(block.offsets, block.maxEntries);
    await readStream(
      s.openChannel,
      s.stream,
      gap.from,
      { max: Number.POSITIVE_INFINITY, until: gap.to, idleMs: Math.max(s.idleMs, 5000), prefetch: 1000 },
      (r) => {
        builder.saw(r.offset);
        visit(r, builder);
      },
    );
    for (const b of builder.finish()) await s.appendIndex(encodeBlock(b)).catch(() => undefined);
  }
}
