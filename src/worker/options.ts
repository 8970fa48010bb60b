import { checkInteger, checkKnownKeys } from '../core';

export interface WorkerOptions {
  /**
   * On close, in-flight jobs get this long to finish before their signal aborts and they return to the queue.
   * Default 10 000 ms.
   */
  readonly shutdownGraceMs?: number;
  /** Delay of a job postponed because its circuit breaker is open. Default 5 000 ms. */
  readonly postponeDelayMs?: number;
  /**
   * Classic queues: deliveries of one job before it is dead-lettered as a crash loop (quorum queues use
   * x-delivery-limit). Default 10.
   */
  readonly redeliveryLimit?: number;
  /** How long republishing a retry or a dead letter may wait for the broker's confirm. Default 30 000 ms. */
  readonly republishTimeoutMs?: number;
  /**
   * A delivery with a larger body is dead-lettered as `too-large` without being decoded or parsed, so
   * one oversized message from another publisher cannot cost the worker hundreds of MB. Default
   * 16 MiB (16 777 216 bytes), the same as `publisher.maxBodyBytes`.
   */
  readonly maxBodyBytes?: number;
  /**
   * Ordered partitions (docs/guide/ordered-partitions.md): each worker process sends a membership heartbeat
   * this often. A process's lease on its partitions lasts 4 heartbeats, the others take its partitions over
   * after 6 without one, and a newcomer claims its partitions after 1. Lower: faster failover, more
   * spurious handovers when an event loop stalls. Default 500 ms.
   */
  readonly partitionHeartbeatMs?: number;
  /**
   * Deliveries each queue's consumer holds beyond its concurrency, each started the moment a running job
   * ends, so that the broker sends the next ones while these run (docs/guide/workers.md#prefetch): for
   * queues of short jobs. At most the queue's concurrency. Off by default (0: prefetch = concurrency), since
   * a held job waits for a slot in its busy process while another process may be idle. Queues with
   * priorities, batch jobs, fair share or ordered partitions never hold ahead. Default 0.
   */
  readonly prefetchAhead?: number;
}

export type ResolvedWorkerOptions = Required<WorkerOptions>;

export const WORKER_DEFAULTS: ResolvedWorkerOptions = Object.freeze({
  shutdownGraceMs: 10_000,
  postponeDelayMs: 5_000,
  redeliveryLimit: 10,
  republishTimeoutMs: 30_000,
  maxBodyBytes: 16 * 1024 * 1024,
  partitionHeartbeatMs: 500,
  prefetchAhead: 0,
});

const KNOWN = {
  shutdownGraceMs: true,
  postponeDelayMs: true,
  redeliveryLimit: true,
  republishTimeoutMs: true,
  maxBodyBytes: true,
  partitionHeartbeatMs: true,
  prefetchAhead: true,
} as const satisfies Record<keyof WorkerOptions, true>;

export function resolveWorkerOptions(input: WorkerOptions = {}): ResolvedWorkerOptions {
  checkKnownKeys('worker', input, KNOWN);
  return Object.freeze({
    shutdownGraceMs: checkInteger(
      'worker.shutdownGraceMs',
      input.shutdownGraceMs ?? WORKER_DEFAULTS.shutdownGraceMs,
      0,
    ),
    postponeDelayMs: checkInteger(
      'worker.postponeDelayMs',
      input.postponeDelayMs ?? WORKER_DEFAULTS.postponeDelayMs,
      1,
    ),
    redeliveryLimit: checkInteger(
      'worker.redeliveryLimit',
      input.redeliveryLimit ?? WORKER_DEFAULTS.redeliveryLimit,
      1,
    ),
    republishTimeoutMs: checkInteger(
      'worker.republishTimeoutMs',
      input.republishTimeoutMs ?? WORKER_DEFAULTS.republishTimeoutMs,
      1,
    ),
    maxBodyBytes: checkInteger('worker.maxBodyBytes', input.maxBodyBytes ?? WORKER_DEFAULTS.maxBodyBytes, 1),
    partitionHeartbeatMs: checkInteger(
      'worker.partitionHeartbeatMs',
      input.partitionHeartbeatMs ?? WORKER_DEFAULTS.partitionHeartbeatMs,
      20,
    ),
    prefetchAhead: checkInteger(
      'worker.prefetchAhead',
      input.prefetchAhead ?? WORKER_DEFAULTS.prefetchAhead,
      0,
    ),
  });
}
