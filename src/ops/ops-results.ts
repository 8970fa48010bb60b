import type { ProcessStatus } from '../process-control';
import type { QueueType } from '../topology';

/** One job queue as the broker (and, with the management API, its unacked count) tells it. */
export interface QueueOverview {
  /** Topology key (`email`). */
  readonly key: string;
  /** Full broker name (`<namespace>.email`). */
  readonly name: string;
  readonly type: QueueType;
  /** False when the queue is not on the broker (see `topology diff`); the counts are then 0. */
  readonly exists: boolean;
  /** Messages waiting to be delivered. */
  readonly ready: number;
  readonly consumers: number;
  /** Delivered, not yet acknowledged: running jobs. Only with the management API, else undefined. */
  readonly unacked: number | undefined;
  /** Messages in its parking queue (dead letters). */
  readonly dead: number;
  /** Whether an operator paused it (its pause marker exists). */
  readonly paused: boolean;
  /**
   * A queue with fairness: each lane's depth (current lanes by index, then the draining lanes of a lane-count
   * change). `ready` above is the queue's own (its intake). docs/guide/fair-share.md.
   */
  readonly lanes?: readonly LaneOverview[];
}

/** One lane of a queue with fairness, in `ops.queues()`. */
export interface LaneOverview {
  readonly name: string;
  readonly index: number;
  /** A lane of the previous lane count, drained and then removed from the plan. */
  readonly draining: boolean;
  /** A partition (docs/guide/ordered-partitions.md) rather than a fair-share lane. */
  readonly partition?: true;
  /** A partition whose keys run in order (`order: 'per-key'`); absent for `order: 'none'`. */
  readonly ordered?: true;
  readonly exists: boolean;
  readonly ready: number;
  readonly consumers: number;
  /** Only with the management API, else undefined. */
  readonly unacked: number | undefined;
}

/** What `pause` and `resume` report: the state kept on the broker and who obeyed. */
export interface PauseResult {
  readonly queue: string;
  /** The operator's pause as now recorded on the broker. */
  readonly paused: boolean;
  /** Processes that run the queue's jobs and report the new state. */
  readonly confirmed: readonly ProcessStatus[];
  /** Processes that run the queue's jobs and answered with the old state (retry, or look at them). */
  readonly unconfirmed: readonly ProcessStatus[];
  /**
   * Processes listening on the control exchange that did not answer in time. Known only through the
   * management API (it counts the listeners); undefined without it.
   */
  readonly silent: number | undefined;
}

/** The processes that answered, and how many listening ones did not (management API only). */
export interface ProcessesReport {
  readonly processes: readonly ProcessStatus[];
  readonly silent: number | undefined;
}

/**
 * Why a schedule does not fire now: `'paused'` through the registry; `'no-scheduler'`: no process takes
 * part in the cron election (the election queue has no consumer); `'not-held'`: a scheduler runs, but the
 * leader does not hold this schedule (a code schedule of a process that does not lead, or one the leader
 * cannot run), judged from the processes that answered.
 */
export type ScheduleNotFiredReason = 'paused' | 'no-scheduler' | 'not-held';

/** A schedule across the processes that hold it, the config's `@Cron`s and the schedule registry. */
export interface ScheduleOverview {
  readonly id: string;
  readonly job: string;
  readonly pattern: string;
  readonly tz: string;
  readonly nextFireAt: Date;
  readonly lastFiredAt: Date | undefined;
  /** Ids of the processes that hold it. */
  readonly heldBy: readonly string[];
  /** The id of the process that fires it (the cron leader among its holders), if one leads. */
  readonly firedBy: string | undefined;
  /** Declared by a `@Cron` of the config's job classes (else added at runtime by `warren.cron.schedule`). */
  readonly declared: boolean;
  /**
   * `'registry'`: defined in the broker's schedule registry (`warren.cron.add`, `ops.addSchedule`, the
   * CLI); `'code'`: declared in code (a `@Cron`, `warren.cron.schedule()`), which wins over a registry
   * definition of the same id.
   */
  readonly source: 'code' | 'registry';
  /** Paused through the registry (`warren.cron.pause`): no process fires it until resumed. */
  readonly paused: boolean;
  /**
   * Whether a process fires its ticks now: it is not paused, some process takes part in the cron election,
   * and the leader holds it (a registry schedule: every scheduling process holds it, so the leader does
   * unless it answered without it). `notFired` says why not.
   */
  readonly isFired: boolean;
  /** Why it does not fire, when `isFired` is false. */
  readonly notFired: ScheduleNotFiredReason | undefined;
}

/** One row of the planned topology, for people. */
export interface PlanEntry {
  readonly entity: 'exchange' | 'queue' | 'binding';
  readonly name: string;
  readonly settings: string;
}

/** What `apply` did: declared everything (idempotent); with the management API, which ones were missing. */
export interface ApplyResult {
  readonly created: readonly string[] | undefined;
}
