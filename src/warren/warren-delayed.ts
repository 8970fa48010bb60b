import type { EmitEvent } from '../core';
import type { CancelledJob, JobControl } from '../job-control';
import { rescheduleAt, type RescheduleOptions } from './job-control';

/**
 * `warren.delayed`: delayed jobs by id, from any process (docs/guide/job-control.md), as
 * `ops.delayed` does in warren/ops. Each action is a record on the namespace's job-control stream that
 * every worker follows; the job is dropped or moved when it comes due.
 */
export class WarrenDelayed {
  /** Made by the Warren; reach it as `warren.delayed`. */
  constructor(
    private readonly jobControl: JobControl,
    private readonly emit: EmitEvent,
  ) {}

  /**
   * Cancels a delayed job: once the broker confirms the record, no worker runs it. Resolves with what is
   * known of it (its due time, name and queue for a `controllable` job) and emits `cancelled` here, now.
   * Its message stays held in the delay levels until its due time (RabbitMQ cannot take one message out of
   * a queue), then the worker that meets it drops it (event `discarded`).
   *
   * @example
   * const { dueAt } = await warren.delayed.cancel('invoice-42');
   */
  async cancel(jobId: string): Promise<CancelledJob> {
    const cancelled = await this.jobControl.cancel(jobId);
    this.emit('cancelled', {
      jobId,
      name: cancelled.name,
      queue: cancelled.queue,
      cancelledAt: cancelled.cancelledAt.getTime(),
      dueAt: cancelled.dueAt?.getTime(),
    });
    return cancelled;
  }

  /** Runs a delayed job published with `{ controllable: true }` now; the delayed original is dropped. */
  async promote(jobId: string): Promise<void> {
    return this.jobControl.promote(jobId);
  }

  /** Moves a delayed job to `runAt` or `delayMs` from now (earlier only if it was published `controllable`). */
  async reschedule(jobId: string, options: RescheduleOptions): Promise<void> {
    return this.jobControl.reschedule(jobId, rescheduleAt(jobId, options));
  }
}
