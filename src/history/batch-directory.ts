/** What the stream keeps, which a directory mirrors (with a margin) so that it never outgrows the history. */
export interface DirectoryRetention {
  /** The history's `maxAgeMs`, ms. */
  readonly maxAgeMs: number;
  /** The history's `maxBytes` plus what a segment adds before retention drops it, bytes. */
  readonly maxBytes: number;
}

/** Entries past the head are compacted away once this many have been dropped. */
const COMPACT_AFTER = 4096;

/**
 * A lookup server's directory of the history (live-history.ts): per batch, its offset and the hashes of the
 * job ids in it, 4 bytes an id. Pure. Entries leave as the stream's retention would drop their batches: once
 * older than `maxAgeMs` (counted from when the directory took them, so never before the stream) or once
 * the batches after them hold more than `maxBytes`, so a server that runs for weeks holds what the history
 * holds, not all it ever saw.
 */
export class BatchDirectory {
  private offsets: number[] = [];
  private hashes: Uint32Array[] = [];
  private bytes: number[] = [];
  private takenAt: number[] = [];
  private head = 0;
  private totalBytes = 0;

  constructor(private readonly retention: DirectoryRetention) {}

  /** Batches held. */
  get size(): number {
    return this.offsets.length - this.head;
  }

  add(offset: number, hashes: Uint32Array, bytes: number, now = Date.now()): void {
    this.offsets.push(offset);
    this.hashes.push(hashes);
    this.bytes.push(bytes);
    this.takenAt.push(now);
    this.totalBytes += bytes;
    this.prune(now);
  }

  /** The offsets of the batches that may hold the hash, oldest first. */
  offsetsOf(hash: number): number[] {
    const found: number[] = [];
    for (let i = this.head; i < this.offsets.length; i += 1)
      if (this.hashes[i]!.includes(hash)) found.push(this.offsets[i]!);
    return found;
  }

  private prune(now: number): void {
    const { maxAgeMs, maxBytes } = this.retention;
    while (
      this.head < this.offsets.length - 1 &&
      (this.totalBytes > maxBytes || this.takenAt[this.head]! < now - maxAgeMs)
    ) {
      this.totalBytes -= this.bytes[this.head]!;
      this.head += 1;
    }
    if (this.head < COMPACT_AFTER) return;
    this.offsets = this.offsets.slice(this.head);
    this.hashes = this.hashes.slice(this.head);
    this.bytes = this.bytes.slice(this.head);
    this.takenAt = this.takenAt.slice(this.head);
    this.head = 0;
  }
}
