import type * as amqp from 'amqplib';
import type { JobEventBase, ProcessScope } from '../core';
import type { DecodedJob } from '../message';
import type { PlannedJobQueue } from '../topology';
import type { AckBatcher } from './ack-batcher';
import type { RunningJob } from './run-handler';

/** How a delivery is settled on the channel it came from (the consumer's AckBatcher). */
export type Settlement = Pick<AckBatcher, 'ack' | 'flush' | 'requeue' | 'reject' | 'retryInPlace'>;

/** A delivery whose body decoded: what the guards, the handler run and the outcome settler take. */
export interface JobDelivery extends Delivery {
  readonly job: DecodedJob;
}

/**
 * One delivery, from the consume callback until it is settled: the message, the queue it came from, how
 * it is settled, and what the worker learned of it on the way (its decoded job, its handler run, that
 * run's instrumentation scope). The consumer builds one per message; the processor, the guards, the
 * republisher and the outcome settler take it instead of a `(message, queue, settle, job)` tuple. A class,
 * with every field set in the constructor: one allocation of one shape per message on the hot path.
 *
 * It settles at most once: whichever of ack, requeue or reject comes first wins, later calls do nothing
 * (a republish that was refused after its ack, a shutdown racing a finished job).
 */
export class Delivery {
  private isSettled = false;
  private decodedJob: DecodedJob | undefined = undefined;
  private run: RunningJob | undefined = undefined;
  private runScope: ProcessScope | undefined = undefined;
  private runStartedAt = 0;
  private lostWith: Error | undefined = undefined;

  constructor(
    readonly message: amqp.ConsumeMessage,
    readonly queue: PlannedJobQueue,
    private readonly settlement: Settlement,
    /**
     * An ordered partition's lease check, run each time its handler reads `ctx.signal`: a lease that ran out
     * (the process was frozen) fences the partition there and then, so the signal reads aborted at once.
     */
    readonly checkOwnership: (() => void) | undefined = undefined,
  ) {}

  /** The job its body decoded to (attempts clamped once checked); undefined while, or if never, decoded. */
  get job(): DecodedJob | undefined {
    return this.decodedJob;
  }

  /** Its handler run, once started: what the consumer aborts on shutdown. */
  get running(): RunningJob | undefined {
    return this.run;
  }

  /** The instrumentation scope of its handler run, if an instrumentation is set and the job ran. */
  get scope(): ProcessScope | undefined {
    return this.runScope;
  }

  /** When its handler run started (ms since epoch); 0 if it did not run. */
  get startedAt(): number {
    return this.runStartedAt;
  }

  /**
   * Why its ordered partition went elsewhere, once it did: from then on its run is aborted with this reason,
   * also a run not yet started or started later (a fence can come between a start's lease check and the
   * handler's first read of `ctx.signal`).
   */
  get lostReason(): Error | undefined {
    return this.lostWith;
  }

  /** Its partition went to another worker: aborts its run, now or as soon as it is started. */
  lose(reason: Error): void {
    this.lostWith ??= reason;
    this.run?.abortForShutdown(this.lostWith);
  }

  /** Records the job triage decoded (and checked): from here on the delivery is a JobDelivery. */
  assignJob(job: DecodedJob): asserts this is JobDelivery {
    this.decodedJob = job;
  }

  /** Records its handler run, so that a shutdown can abort it and the settler can end its scope. */
  started(running: RunningJob, scope: ProcessScope | undefined, startedAt: number): void {
    this.run = running;
    this.runScope = scope;
    this.runStartedAt = startedAt;
    if (this.lostWith !== undefined) running.abortForShutdown(this.lostWith);
  }

  /**
   * `immediate` sends the ack now instead of with the next batch: used after a republish, whose copy
   * may come back before the batch goes out (a crash in between would leave both copies alive).
   */
  ack(immediate?: boolean): void {
    if (this.isSettled) return;
    this.isSettled = true;
    this.settlement.ack(this.message.fields.deliveryTag);
    if (immediate) this.settlement.flush();
  }

  /** Back to its queue unsettled (the broker redelivers it, marked `redelivered`). */
  requeue(): void {
    if (this.isSettled) return;
    this.isSettled = true;
    this.settlement.requeue(this.message);
  }

  /**
   * Back to its queue as failed (a reject with requeue): on a queue with `inPlaceRetryMs` the broker
   * redelivers it after that delay, its `x-delivery-count` one higher.
   */
  retryInPlace(): void {
    if (this.isSettled) return;
    this.isSettled = true;
    this.settlement.retryInPlace(this.message);
  }

  /** Dead-letters the delivery through the broker (nack without requeue), body untouched. */
  reject(): void {
    if (this.isSettled) return;
    this.isSettled = true;
    this.settlement.reject(this.message);
  }

  /** The fields every job event of this delivery starts with: a new object each call (listeners own it). */
  eventBase(this: JobDelivery): JobEventBase {
    return { jobId: this.job.jobId, name: this.job.name, queue: this.queue.key, attempt: this.job.attempt };
  }
}
