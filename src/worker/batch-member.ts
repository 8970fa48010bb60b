import type { BatchJob } from '../core';
import type { JobDelivery } from './delivery';
import type { RunningJob, RunOutcome } from './run-handler';

/**
 * One delivery of a batch, from the moment it joins until its outcome is settled: the BatchJob the handler
 * sees (`fail`, `complete`) and the RunningJob the consumer and the settler see (its own outcome, its own
 * shutdown abort). Settled at most once: a `fail` after the batch ended, or a second timeout, does nothing.
 */
export class BatchMember implements BatchJob, RunningJob {
  readonly jobId: string;
  readonly attempt: number;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly enqueuedAt: number;
  readonly redelivered: boolean;
  readonly outcome: Promise<RunOutcome>;
  private resolve!: (outcome: RunOutcome) => void;
  private isSettled = false;
  /** What the handler said of this job: undefined until it calls `fail` or `complete`. */
  private verdict: RunOutcome | undefined;

  constructor(
    readonly delivery: JobDelivery,
    readonly data: unknown,
    readonly maxAttempts: number,
    /** The batch drops a member the shutdown aborts before its batch ran (`runningIn` replaces it). */
    private onAbort: (member: BatchMember) => void,
  ) {
    const { job } = delivery;
    this.jobId = job.jobId;
    this.attempt = job.attempt;
    this.headers = job.headers;
    this.enqueuedAt = job.enqueuedAt;
    this.redelivered = delivery.message.fields.redelivered;
    this.outcome = new Promise((resolve) => {
      this.resolve = resolve;
    });
  }

  get settled(): boolean {
    return this.isSettled;
  }

  /** Whether the handler marked this job failed. */
  get failedByHandler(): boolean {
    return this.verdict?.kind === 'failed';
  }

  /** Its batch runs: a shutdown abort from now on aborts the whole run (`abort`). */
  runningIn(abort: () => void): void {
    this.onAbort = abort;
  }

  fail(error: unknown): void {
    this.verdict = { kind: 'failed', error };
  }

  complete(result: unknown): void {
    this.verdict = { kind: 'completed', result };
  }

  /** The batch returned: this job ends as the handler said, else completed with no result. */
  finish(): void {
    this.settle(this.verdict ?? { kind: 'completed', result: undefined });
  }

  settle(outcome: RunOutcome): void {
    if (this.isSettled) return;
    this.isSettled = true;
    this.resolve(outcome);
  }

  abortForShutdown(): void {
    if (this.isSettled) return;
    this.onAbort(this);
  }
}
