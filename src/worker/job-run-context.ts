import type { BreakerHandle, EmitEvent, JobContext, Logger, ListensTo } from '../core';
import type { JobDelivery } from './delivery';
import { ProgressCoalescer } from './progress-coalescer';

/** What a handler's `ctx` reaches beyond its own delivery: the same for every job of a worker. */
export interface JobRunContextDeps {
  readonly publishJob: JobContext['publish'];
  readonly log: Logger;
  /** The named breaker, for a job of `queue` (a queue whose jobs use a breaker pauses while it is open). */
  readonly breaker: (name: string, queue: string) => BreakerHandle;
  readonly emit: EmitEvent;
  readonly listens: ListensTo;
}

/**
 * The `ctx` a handler gets. A class rather than an object literal: getters on a literal are built
 * per job, and the logger child and the AbortSignal are made only when a handler asks for them.
 */
export class JobRunContext implements JobContext {
  readonly jobId: string;
  readonly name: string;
  readonly attempt: number;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly enqueuedAt: number;
  readonly queue: string;
  readonly redelivered: boolean;
  readonly publish: JobContext['publish'];
  /** Bound, so that `const { breaker } = ctx` works. */
  readonly breaker: (name: string) => BreakerHandle;
  /** Bound, so that `const { progress } = ctx` works. */
  readonly progress: (value: unknown) => void;
  private child: Logger | undefined;
  private coalescer: ProgressCoalescer | undefined;

  constructor(
    delivery: JobDelivery,
    readonly maxAttempts: number,
    private readonly deps: JobRunContextDeps,
    private readonly signalOf: () => AbortSignal,
  ) {
    const { job } = delivery;
    this.jobId = job.jobId;
    this.name = job.name;
    this.attempt = job.attempt;
    this.headers = job.headers;
    this.enqueuedAt = job.enqueuedAt;
    const queue = delivery.queue.key;
    this.queue = queue;
    this.redelivered = delivery.message.fields.redelivered;
    this.publish = deps.publishJob;
    this.breaker = (name) => deps.breaker(name, queue);
    this.progress = (value) => {
      this.coalescer ??= new ProgressCoalescer((latest) => this.sendProgress(latest));
      this.coalescer.report(value);
    };
  }

  /** The attempt ended: a coalesced progress value not yet sent goes out before the outcome's event. */
  endProgress(): void {
    this.coalescer?.end();
  }

  /** A `progress` event, if anyone listens: the job's event fields (as `Delivery.eventBase`) and the value. */
  private sendProgress(progress: unknown): void {
    if (!this.deps.listens('progress', this.jobId, this.name, this.queue)) return;
    this.deps.emit('progress', {
      jobId: this.jobId,
      name: this.name,
      queue: this.queue,
      attempt: this.attempt,
      progress,
    });
  }

  get signal(): AbortSignal {
    return this.signalOf();
  }

  get log(): Logger {
    this.child ??= this.deps.log.child({
      jobId: this.jobId,
      job: this.name,
      attempt: this.attempt,
      queue: this.queue,
    });
    return this.child;
  }
}
