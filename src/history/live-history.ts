import { randomUUID } from 'node:crypto';
import type * as amqp from 'amqplib';
import { HEADERS } from '../message';
import { followStream, type StreamFollower, type StreamRecord } from '../streams';
import { BatchDirectory, type DirectoryRetention } from './batch-directory';
import { parseHistoryBatch } from './history-batch';
import { decodeKeyHashes, historyKeyHash, jobIdsOf } from './index-state';

/** What a lookup server keeps of the history: where each job id may be, the newest records whole. */
export interface LiveHistoryDeps {
  readonly stream: string;
  readonly openChannel: () => Promise<amqp.Channel>;
  /** The newest records kept whole, so most answers need no read, bytes. */
  readonly cacheBytes: number;
  /** The history's retention: batches the stream has dropped leave the directory too. */
  readonly retention: DirectoryRetention;
}

/**
 * The whole history followed in one process (a lookup server's, lookup-server.ts): every batch's offset with
 * the hashes of the job ids it holds (batch-directory.ts: 4 bytes an id, from the batch's `warren-index-keys`
 * header, parsed only when a batch has none) and the newest records whole up to `cacheBytes`. Nothing is
 * proven here: an entry is only where to look, and the asker proves and parses every record it is handed.
 *
 * Its marker: {@link marker} gives a token to append to the history (an empty batch); {@link reached}
 * resolves once the follower delivered it, so everything appended before is in the index by then. That is
 * how an answer covers the whole history up to the moment it was asked, without the stream's end being
 * known (AMQP 0-9-1 never announces it).
 */
export class LiveHistory {
  private readonly directory: BatchDirectory;
  private readonly cache = new Map<number, StreamRecord>();
  private cachedBytes = 0;
  /** The offset the follower reads next: a reconnect follows on from there. */
  private next = 0;
  private follower: StreamFollower | undefined;
  private following: Promise<void> | undefined;
  private readonly markers = new Map<string, () => void>();

  constructor(private readonly deps: LiveHistoryDeps) {
    this.directory = new BatchDirectory(deps.retention);
  }

  /** Batches the directory holds. */
  get size(): number {
    return this.directory.size;
  }

  /** Follows the history from where it stopped (its first record the first time): a step of every (re)connect. */
  async open(): Promise<void> {
    const { openChannel, stream } = this.deps;
    this.following = undefined;
    this.follower = await followStream(openChannel, stream, this.next, (r) => this.take(r));
  }

  /** Follows again when the follower's channel closed under a live connection (a broker-side cancel). */
  ensureFollowing(): Promise<void> {
    if (this.follower !== undefined && !this.follower.isClosed) return Promise.resolve();
    this.following ??= this.open().catch(() => {
      this.following = undefined;
    });
    return this.following;
  }

  /** A new marker's token, and the promise that its record was read back (false after `timeoutMs`). */
  marker(timeoutMs: number): { token: string; reached: Promise<boolean> } {
    const token = randomUUID();
    const reached = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.markers.delete(token);
        resolve(false);
      }, timeoutMs);
      this.markers.set(token, () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    return { token, reached };
  }

  /** The offsets of the batches that may hold events of the job (oldest first). */
  offsetsOf(jobId: string): number[] {
    return this.directory.offsetsOf(historyKeyHash(jobId));
  }

  /** The record at an offset, when it is still kept whole. */
  cached(offset: number): StreamRecord | undefined {
    return this.cache.get(offset);
  }

  async close(): Promise<void> {
    await this.follower?.close();
    this.follower = undefined;
  }

  private take(record: StreamRecord): void {
    if (record.offset < this.next) return;
    this.next = record.offset + 1;
    const headers = record.properties.headers;
    const token = headers?.[HEADERS.lookupMarker];
    if (typeof token === 'string') {
      this.markers.get(token)?.();
      this.markers.delete(token);
    }
    const hashes = hashesOf(record);
    if (hashes === undefined || hashes.length === 0) return;
    this.directory.add(record.offset, hashes, record.content.length);
    // a copy of its own: the delivery's bytes may be a slice of a larger read, which would stay alive with it
    const content = Buffer.from(record.content);
    this.cache.set(record.offset, { ...record, content });
    this.cachedBytes += record.content.length;
    for (const [offset, old] of this.cache) {
      if (this.cachedBytes <= this.deps.cacheBytes) break;
      this.cache.delete(offset);
      this.cachedBytes -= old.content.length;
    }
  }
}

/** The job ids' hashes of a batch: its header's, or its own ids' when it has none; undefined: not a batch. */
function hashesOf(record: StreamRecord): Uint32Array | undefined {
  const fromHeader = decodeKeyHashes(record.properties.headers?.[HEADERS.indexKeys]);
  if (fromHeader !== undefined) return Uint32Array.from(fromHeader);
  const batch = parseHistoryBatch(record.content);
  return batch === undefined ? undefined : Uint32Array.from(jobIdsOf(batch), historyKeyHash);
}
