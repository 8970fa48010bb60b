import type { MembershipProof } from '../coordination';
import type { ConnectionManager } from '../connection';
import type { Logger } from '../core';
import type { PlannedJobQueue } from '../topology';
import type { Delivery } from './delivery';
import type { JobProcessor } from './job-processor';
import type { KeyLimitKind, KeyLimits } from './key-limits';

/** How one queue is consumed. */
export interface ConsumerSettings {
  /** How many deliveries run at once. */
  readonly concurrency: number;
  /** Deliveries held beyond `concurrency` (0 to `concurrency`), each started when a run ends. */
  readonly ahead: number;
  /** The consumer's `x-consumer-timeout`: the longest a delivery may wait and run, and a margin, ms. */
  readonly consumerTimeoutMs: number;
}

export interface QueueConsumerDeps {
  readonly manager: ConnectionManager;
  readonly processor: Pick<JobProcessor, 'process'>;
  /** Re-declares the topology after the broker cancelled the consumer (its queue was deleted). */
  readonly reapplyTopology: () => Promise<void>;
  readonly log: Logger;
  /** An ordered partition's fence: while true, its deliveries are not settled (the channel's close returns them). */
  readonly isFenced?: () => boolean;
  /** An ordered partition's lease check, run when a handler reads `ctx.signal` (see Delivery). */
  readonly checkOwnership?: () => void;
  /**
   * An ordered partition's channel closed: the broker has its deliveries back, so its running jobs stop. Such a
   * consumer is never cancelled (a cancelled quorum consumer keeps its unacked while the next one is fed).
   */
  readonly channelLost?: () => void;
}

/** How a partitioned queue is consumed. */
export interface PartitionedOptions {
  /** The partitions consumed: the current ones, or the previous ones while the count changes. */
  readonly partitions: readonly PlannedJobQueue[];
  readonly heartbeatMs: number;
  /** How long a handover lets the running jobs finish (`worker.shutdownGraceMs`). */
  readonly handoverGraceMs: number;
  /** The proof of this membership's heartbeats (one per membership: its replay guard is its own). */
  readonly membershipProof?: MembershipProof;
  /** The per-key limits of the queue's jobs (`order: 'none'` partitions), if any. */
  readonly keyLimits?: PartitionKeyLimits;
}

/** Per-key limits as a partitioned consumer applies them (docs/guide/per-key-limits.md). */
export interface PartitionKeyLimits {
  readonly limits: KeyLimits;
  /** Deliveries over their key's limit a partition keeps waiting aside, in arrival order; more are re-delayed. */
  readonly heldPerPartition: number;
  /**
   * Besides those, deliveries whose key's rate frees a slot within 11 delay units (re-delayed jobs back early
   * for their slot) a partition keeps waiting aside; the partition's prefetch is the queue's concurrency
   * plus both bounds and the parked ones'.
   */
  readonly dueHeldPerPartition: number;
  /**
   * Besides both, deliveries over their key's rate whose slot is within `parkHorizonMs` that a partition parks
   * until the slot (RateParking): a saturated key's backlog waits in its owner instead of going round the delay
   * levels. 0 without a per-key rate. The partition's prefetch has room for them too.
   */
  readonly parkedPerPartition: number;
  readonly parkHorizonMs: number;
  /** Re-delays a delivery over its key's limit through the delay levels, spending no attempt. */
  readonly defer: (delivery: Delivery, delayMs: number, limit: KeyLimitKind) => Promise<void>;
}
