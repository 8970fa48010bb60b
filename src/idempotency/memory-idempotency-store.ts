import type { ClaimResult, IdempotencyStore } from './idempotency-store';
import {
  resolveMemoryIdempotencyStoreOptions,
  type MemoryIdempotencyStoreOptions,
  type ResolvedMemoryIdempotencyStoreOptions,
} from './options';

/**
 * An idempotency store in this process's memory: duplicates are caught among the warren instances
 * of one process, and forgotten when it exits. Use {@link PostgresIdempotencyStore} when several
 * processes consume the same queues.
 *
 * @example
 * const warren = await createWarren({ topology, handlers, idempotency: new MemoryIdempotencyStore({
 * retentionMs: 3_600_000 }) });
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly options: ResolvedMemoryIdempotencyStoreOptions;
  /** Job id → end of its lease. */
  private readonly running = new Map<string, number>();
  /** Job id → end of its retention, in completion order, which is also expiry order. */
  private readonly completed = new Map<string, number>();

  constructor(options: MemoryIdempotencyStoreOptions = {}) {
    this.options = resolveMemoryIdempotencyStoreOptions(options);
  }

  /** Completed ids currently remembered. */
  get size(): number {
    return this.completed.size;
  }

  async claim(jobId: string, leaseMs: number): Promise<ClaimResult> {
    const now = this.options.now();
    this.forgetExpired(now);
    const retainedUntil = this.completed.get(jobId);
    if (retainedUntil !== undefined && retainedUntil > now) return { status: 'completed' };
    const leaseEnd = this.running.get(jobId);
    if (leaseEnd !== undefined && leaseEnd > now)
      return { status: 'running', retryInMs: Math.min(leaseEnd - now, this.options.recheckMs) };
    this.running.set(jobId, now + leaseMs);
    return { status: 'claimed' };
  }

  async complete(jobId: string): Promise<void> {
    const now = this.options.now();
    this.running.delete(jobId);
    this.completed.delete(jobId);
    this.completed.set(jobId, now + this.options.retentionMs);
    for (const oldest of this.completed.keys()) {
      if (this.completed.size <= this.options.maxCompleted) break;
      this.completed.delete(oldest);
    }
  }

  async release(jobId: string): Promise<void> {
    this.running.delete(jobId);
  }

  private forgetExpired(now: number): void {
    for (const [jobId, retainedUntil] of this.completed) {
      if (retainedUntil > now) break;
      this.completed.delete(jobId);
    }
  }
}
