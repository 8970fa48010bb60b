import type * as amqp from 'amqplib';
import type { Checkpoint, CheckpointCodec } from '../records';
import { newestRecord } from './newest-record';
import type { StreamFollower } from './stream-follower';

/** A reader writes a checkpoint once it applied this many records past the last one it knows of. */
export const CHECKPOINT_EVERY_RECORDS = 10_000;
/** ...and at most once in this long, ms (a flood is checkpointed as it goes, not at every record). */
export const CHECKPOINT_MIN_INTERVAL_MS = 30_000;

export interface CheckpointKeeperDeps {
  readonly codec: CheckpointCodec;
  readonly openChannel: () => Promise<amqp.Channel>;
  /** The stream the checkpoints are kept in. */
  readonly checkpointStream: string;
  /** Appends a checkpoint to the checkpoint stream, with the broker's confirm. */
  readonly append: (message: {
    content: Buffer;
    userId?: string;
    headers: Record<string, string>;
  }) => Promise<void>;
  readonly onWriteFailed?: (error: unknown) => void;
}

/**
 * When one stream reader (the job-control stream's, the registry's) takes and writes checkpoints: it
 * starts from the newest checkpoint it can trust, and once it has caught up it writes one whenever it
 * applied {@link CHECKPOINT_EVERY_RECORDS} records past the newest it knows, at most every
 * {@link CHECKPOINT_MIN_INTERVAL_MS}. Every process that reads may write: the checkpoints are the same
 * state, and the stream keeps only the newest few hundred MiB.
 */
export class CheckpointKeeper {
  private knownUpTo = 0;
  private lastWriteAt = 0;
  private writing: Promise<void> | undefined;

  constructor(private readonly deps: CheckpointKeeperDeps) {}

  /** The newest checkpoint this process can trust, or undefined (none, or none readable now). */
  async newest(): Promise<Checkpoint | undefined> {
    if (!this.deps.codec.isUsable) return undefined;
    const found = await newestRecord(this.deps.openChannel, this.deps.checkpointStream, (r) =>
      this.deps.codec.decode(r.content, r.properties),
    ).catch(() => undefined);
    if (found !== undefined) this.knownUpTo = Math.max(this.knownUpTo, found.upTo);
    return found;
  }

  /**
   * The reader applied every record before `upTo`: writes a checkpoint of `snapshot()` in the background
   * when one is due; during a long read at most every CHECKPOINT_MIN_INTERVAL_MS, and at once when the
   * reader has just caught up (`isCaughtUp`), so the next start begins where this one ended. A failure is
   * reported, never thrown: checkpoints only save reading.
   */
  offer(
    isCaughtUp: boolean,
    upTo: number,
    snapshot: () => { upTo: number; guard: unknown; state: unknown },
  ): void {
    if (upTo - this.knownUpTo < CHECKPOINT_EVERY_RECORDS) return;
    // the caught-up checkpoint is written after one in flight, with the state as it is then
    if (this.writing !== undefined) {
      if (isCaughtUp) void this.writing.then(() => this.offer(true, snapshot().upTo, snapshot));
      return;
    }
    const now = Date.now();
    if (!isCaughtUp && now - this.lastWriteAt < CHECKPOINT_MIN_INTERVAL_MS) return;
    const taken = snapshot();
    const message = this.deps.codec.encode({ at: now, ...taken });
    if (message === undefined) return;
    this.lastWriteAt = now;
    this.writing = this.deps
      .append(message)
      .then(() => {
        this.knownUpTo = Math.max(this.knownUpTo, taken.upTo);
      }, this.deps.onWriteFailed)
      .finally(() => {
        this.writing = undefined;
      });
  }

  /** Waits for a checkpoint being written (a close must not cut its confirm short). */
  async settled(): Promise<void> {
    await this.writing;
  }
}

/** A follower from a checkpoint that got no record at all this long after its own record was confirmed, ms. */
const STALE_CHECKPOINT_MS = 3000;

/**
 * Watches a follower that started at a checkpoint's offset, once the reader's own record (a mark, a sync)
 * is confirmed on the stream: nothing delivered at all for STALE_CHECKPOINT_MS means the stream ends before
 * that offset (it was deleted and declared again since; RabbitMQ waits for an offset past the end), and
 * `onStale` reads again from the first record. Returns the cancel, for when the read ends first.
 */
export function watchForStaleCheckpoint(follower: StreamFollower, onStale: () => void): () => void {
  const timer = setTimeout(() => {
    if (!follower.isClosed && follower.delivered === 0) onStale();
  }, STALE_CHECKPOINT_MS);
  timer.unref();
  return () => clearTimeout(timer);
}
