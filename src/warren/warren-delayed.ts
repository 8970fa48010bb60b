import type { JobControl } from '../job-control';
import { rescheduleAt, type RescheduleOptions } from './job-control';

/**
 * `warren.delayed`: delayed jobs by id, from any process (docs/guide/job-control.md), as
 * `ops.delayed` does in warren/ops. Each action is a record on the namespace's job-control stream that
 * every worker follows; the job is dropped or moved when it comes due.
 */
export class WarrenDelayed {
  /** Made by the Warren; reach it as `warren.delayed`. */
  constructor(private readonly jobControl: JobControl) {}

  /** Cancels a delayed job: it is dropped (event `cancelled`) when it comes due. */
  cancel(jobId: string): Promise<void> {
    return this.jobControl.cancel(jobId);
  }

  /** Runs a delayed job published with `{ controllable: true }` now; the delayed original is dropped. */
  promote(jobId: string): Promise<void> {
    return this.jobControl.promote(jobId);
  }

  /** Moves a delayed job to `runAt` or `delayMs` from now (earlier only if it was published `controllable`). */
  reschedule(jobId: string, options: RescheduleOptions): Promise<void> {
    return this.jobControl.reschedule(jobId, rescheduleAt(jobId, options));
  }
}
