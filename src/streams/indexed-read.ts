import type * as amqp from 'amqplib';
import { decodeBlock, encodeBlock, IndexBuilder, uncovered } from './offset-index';
import { firstOffset, lastOffset, readToEnd } from './stream-ends';
import { readStream, type StreamRecord } from './stream-reader';

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
 * entry past the end would otherwise cost a read that waits for a record that never comes. `early`, when
 * given, gets the candidates found before the index's end, as soon as the stream's end is known (they are
 * then not in the result's candidates): a reader can fetch them while the rest of the index arrives.
 */
export async function lookUpIndex(
  s: IndexedStream,
  hash: number,
  early?: (offsets: number[]) => void,
  /** The stream's first and last offsets, when the caller is finding them already. */
  bounds = streamBounds(s),
): Promise<IndexLookup | undefined> {
  const blocks: { from: number; to: number }[] = [];
  const candidates = new Set<number>();
  const marks = new Set<number>();
  let known: { first: number | undefined; end: number | undefined } | undefined;
  const handed = new Set<number>();
  const handOver = () => {
    if (early === undefined || known?.first === undefined || known.end === undefined) return;
    const { first, end } = known;
    const fresh = [...candidates].filter((o) => !handed.has(o) && o >= first && o <= end);
    for (const o of fresh) handed.add(o);
    if (fresh.length > 0) early(fresh);
  };
  const ends = bounds.then((found) => {
    known = found;
    handOver();
    return found;
  });
  // Its failure (no such stream) is reported when it is awaited below, not as an unhandled rejection.
  ends.catch(() => undefined);
  await readToEnd(s.openChannel, s.indexStream, 'first', { idleMs: s.idleMs, prefetch: 200 }, (r) => {
    if (!s.acceptIndex(r)) return;
    const block = decodeBlock(r.content, hash);
    if (block === undefined) return s.skipIndex(r);
    blocks.push(block);
    for (const o of block.offsets) candidates.add(o);
    for (const o of block.marks) marks.add(o);
    if (block.offsets.length > 0) handOver();
  });
  const { first, end } = await ends;
  if (first === undefined || end === undefined) return undefined;
  const kept = (o: number) => o >= first && o <= end;
  return {
    first,
    end,
    blocks,
    candidates: new Set([...candidates].filter((o) => kept(o) && !handed.has(o))),
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
    // One append after another: each block lands in a chunk of its own, so a reader finding the index's
    // end reads one block, not every block a long read made.
    let appended = Promise.resolve();
    const builder = new IndexBuilder(block.offsets, block.maxEntries, (b) => {
      const content = encodeBlock(b);
      appended = appended.then(() => s.appendIndex(content).catch(() => undefined));
    });
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
    builder.finish();
    await appended;
  }
}

/** The stream's first and last offsets (both undefined when it is empty), found at once. */
export async function streamBounds(
  s: Pick<IndexedStream, 'openChannel' | 'stream' | 'idleMs'>,
): Promise<{ first: number | undefined; end: number | undefined }> {
  const [first, end] = await Promise.all([
    firstOffset(s.openChannel, s.stream, s.idleMs),
    lastOffset(s.openChannel, s.stream, s.idleMs),
  ]);
  return { first, end };
}
