import type { BreakerHandle, JobContext, Logger } from '../core';
import type { DecodedJob } from '../message';
import { ProgressCoalescer } from './progress-coalescer';

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
  /** Bound, so that `const { breaker } = ctx` works. */
  readonly breaker: (name: string) => BreakerHandle;
  /** Bound, so that `const { progress } = ctx` works. */
  readonly progress: (value: unknown) => void;
  private child: Logger | undefined;
  private coalescer: ProgressCoalescer | undefined;

  constructor(
    job: DecodedJob,
    readonly queue: string,
    readonly maxAttempts: number,
    readonly redelivered: boolean,
    readonly publish: JobContext['publish'],
    private readonly parentLog: Logger,
    private readonly signalOf: () => AbortSignal,
    breakerOf: (name: string, queue: string) => BreakerHandle,
    onProgress: (value: unknown) => void,
  ) {
    this.jobId = job.jobId;
    this.name = job.name;
    this.attempt = job.attempt;
    this.headers = job.headers;
    this.enqueuedAt = job.enqueuedAt;
    this.breaker = (name) => breakerOf(name, queue);
    this.progress = (value) => {
      this.coalescer ??= new ProgressCoalescer(onProgress);
      this.coalescer.report(value);
    };
  }

  /** The attempt ended: a coalesced progress value not yet sent goes out before the outcome's event. */
  endProgress(): void {
    this.coalescer?.end();
  }

  get signal(): AbortSignal {
    return this.signalOf();
  }

  get log(): Logger {
    this.child ??= this.parentLog.child({
      jobId: this.jobId,
      job: this.name,
      attempt: this.attempt,
      queue: this.queue,
    });
    return this.child;
  }
}
