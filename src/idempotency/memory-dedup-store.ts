import type { DedupRecord, DedupStore, ReserveResult } from './dedup-store';

/**
 * Deduplicated publishing in this process's memory: right for one process that both publishes and
 * works (tests, a single service); use {@link PostgresDedupStore} when several processes publish or
 * work, since the worker that releases the id must see the publisher's reservation.
 */
export class MemoryDedupStore implements DedupStore {
  private readonly reserved = new Map<
    string,
    { readonly job: DedupRecord; readonly until: number; readonly token: string | undefined }
  >();

  constructor(private readonly now: () => number = Date.now) {}

  /** Live reservations. */
  get size(): number {
    const now = this.now();
    let live = 0;
    for (const entry of this.reserved.values()) if (entry.until > now) live++;
    return live;
  }

  async reserve(job: DedupRecord, ttlMs: number, token?: string): Promise<ReserveResult> {
    const now = this.now();
    const existing = this.reserved.get(job.jobId);
    if (existing !== undefined && existing.until > now) return { status: 'exists', job: existing.job };
    this.reserved.set(job.jobId, {
      job: { jobId: job.jobId, name: job.name, queue: job.queue },
      until: now + ttlMs,
      token,
    });
    return { status: 'reserved' };
  }

  async release(jobId: string, token?: string): Promise<void> {
    const held = this.reserved.get(jobId)?.token;
    if (token !== undefined && held !== undefined && held !== token) return; // a later publish's reservation
    this.reserved.delete(jobId);
  }
}
