import {
  JobTimeoutError,
  ShutdownError,
  type BatchContext,
  type BatchHandler,
  type Logger,
  type WarrenEvents,
} from '../core';
import { BatchMember } from './batch-member';
import type { BatchSettings } from './batch-settings';
import type { JobDelivery } from './delivery';
import type { JobRunContextDeps } from './job-run-context';
import type { RegisteredJob } from './registered-job';
import type { RunningJob } from './run-handler';

/** A batch job as the collector runs it. */
export type BatchedJob = RegisteredJob & { readonly batch: BatchSettings };

/** What one batch run tells the rest of warren: the `batchSettled` event, which metrics count. */
export type BatchReport = WarrenEvents['batchSettled'][0];

export interface BatchCollectorDeps {
  readonly context: JobRunContextDeps;
  readonly report: (report: BatchReport) => void;
}

/**
 * The batches of one job in one worker: deliveries join after every guard passed them (job control,
 * validation, rate-limit permits, idempotency claims), a batch runs once `size` wait or the oldest waited
 * `timeoutMs`, and each member gets its own outcome for the outcome settler, as a single job's run would.
 * Several batches of one job may run at once (the prefetch allows them); each has its own signal.
 */
export class BatchCollector {
  private pending: BatchMember[] = [];
  private timer: NodeJS.Timeout | undefined;
  private oldestAt = 0;
  private readonly handler: BatchHandler;

  constructor(
    private readonly job: BatchedJob,
    private readonly deps: BatchCollectorDeps,
  ) {
    this.handler = job.handler as unknown as BatchHandler;
  }

  /** Adds a delivery to the batch filling now; its RunningJob settles when its batch has run. */
  join(delivery: JobDelivery, data: unknown, maxAttempts: number): RunningJob {
    const member = new BatchMember(delivery, data, maxAttempts, (m) => this.drop(m));
    this.pending.push(member);
    if (this.pending.length >= this.job.batch.size) this.flush();
    else if (this.pending.length === 1) {
      this.oldestAt = Date.now();
      this.timer = setTimeout(() => this.flush(), this.job.batch.timeoutMs);
    }
    return member;
  }

  /** Runs the jobs waiting now as a batch, however many (the timer, a full batch). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const members = this.pending;
    if (members.length === 0) return;
    this.pending = [];
    void this.run(members, Date.now() - this.oldestAt);
  }

  /** A shutdown aborts a member whose batch has not run: it leaves the batch and returns to its queue. */
  private drop(member: BatchMember): void {
    const index = this.pending.indexOf(member);
    if (index !== -1) this.pending.splice(index, 1);
    if (this.pending.length === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    member.settle({ kind: 'aborted' });
  }

  private async run(members: BatchMember[], waitedMs: number): Promise<void> {
    const { job, deps } = this;
    const started = Date.now();
    const controller = new AbortController();
    const ctx = batchContext(job, members.length, controller.signal, deps.context);
    let ended = false;
    const end = (failed: number, error?: unknown) => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      deps.report({
        name: job.planned.name,
        queue: ctx.queue,
        size: members.length,
        waitedMs,
        durationMs: Date.now() - started,
        failed,
        ...(error !== undefined ? { error } : {}),
      });
    };
    // A shutdown past its grace aborts the whole run: every member returns to its queue, no attempt spent.
    const abort = () => {
      controller.abort(
        new ShutdownError('worker shut down before its batch finished; the jobs return to the queue'),
      );
      for (const member of members) member.settle({ kind: 'aborted' });
      end(0);
    };
    for (const member of members) member.runningIn(abort);
    // On timeout the signal aborts and every job fails at once (a handler that ignores its signal keeps
    // running, but what it returns no longer counts), each by its own retry policy.
    const timer = setTimeout(() => {
      const error = new JobTimeoutError(job.timeoutMs, { jobName: job.planned.name, queue: ctx.queue });
      controller.abort(error);
      for (const member of members) member.settle({ kind: 'failed', error: timeoutOf(member, job) });
      end(members.length, error);
    }, job.timeoutMs);
    try {
      await this.handler.handleBatch(members, ctx);
      for (const member of members) member.finish();
      end(members.filter((m) => m.failedByHandler).length);
    } catch (error) {
      for (const member of members) member.settle({ kind: 'failed', error });
      end(members.length, error ?? new Error('handleBatch threw undefined'));
    }
  }
}

/** Each member of a timed-out batch fails with a timeout naming its own job. */
function timeoutOf(member: BatchMember, job: BatchedJob): JobTimeoutError {
  return new JobTimeoutError(job.timeoutMs, {
    jobName: job.planned.name,
    jobId: member.jobId,
    queue: member.delivery.queue.key,
    attempt: member.attempt,
  });
}

function batchContext(
  job: BatchedJob,
  size: number,
  signal: AbortSignal,
  deps: JobRunContextDeps,
): BatchContext {
  const queue = job.planned.queue;
  let log: Logger | undefined;
  return {
    name: job.planned.name,
    queue,
    signal,
    get log() {
      log ??= deps.log.child({ job: job.planned.name, queue, batch: size });
      return log;
    },
    publish: deps.publishJob,
    breaker: (name) => deps.breaker(name, queue),
  };
}
