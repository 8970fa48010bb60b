import { HEADERS } from '../message';
import type { DedupRelease } from './dedup-release';
import type { JobDelivery } from './delivery';
import type { PostponingGuardDeps } from './guard-deps';

/**
 * Job control (docs/guide/job-control.md): what to do with a delayed job that came due: run
 * it, drop it (cancelled) or re-delay it by this many ms. Asked only of jobs with `warren-delayed`.
 */
export interface JobControlDecider {
  decide(jobId: string, copy: unknown, now: number): Promise<'run' | 'drop' | number>;
  /** A debounced copy (`warren-debounce`): runs only if it is the latest of its debounce id. */
  decideDebounced(debounceId: string, copy: unknown): Promise<'run' | 'drop' | number>;
  /** Reads the control stream ahead, so that the first delayed job does not wait for that read. */
  readAhead?(): Promise<void>;
}

export interface JobControlGuardDeps extends PostponingGuardDeps {
  readonly jobControl: JobControlDecider;
  readonly dedup: DedupRelease;
}

/**
 * The guard of delayed jobs that came due (those with `warren-delayed`, which the processor checks
 * inline): job control may have cancelled or rescheduled them meanwhile.
 */
export class JobControlGuard {
  constructor(private readonly deps: JobControlGuardDeps) {}

  /** False when job control settled the job: dropped (acked, `discarded`) or rescheduled (re-delayed). */
  async admit(delivery: JobDelivery, now: number): Promise<boolean> {
    const { job, message } = delivery;
    let verdict: 'run' | 'drop' | number;
    const headers = message.properties.headers;
    const debounceId = headers?.[HEADERS.debounce];
    try {
      verdict = await (typeof debounceId === 'string'
        ? this.deps.jobControl.decideDebounced(debounceId, headers?.[HEADERS.controlCopy])
        : this.deps.jobControl.decide(job.jobId, headers?.[HEADERS.controlCopy], now));
    } catch (error) {
      // Never run a job that may be cancelled: wait for the control stream as for an open breaker.
      this.deps.log.warn({ err: error, ...delivery.eventBase() }, 'job control unreadable; job postponed');
      verdict = this.deps.postponeDelayMs;
    }
    if (verdict === 'run') return true;
    if (verdict === 'drop') {
      delivery.ack();
      this.deps.dedup.release(delivery);
      this.deps.emit('discarded', {
        ...delivery.eventBase(),
        cause: typeof debounceId === 'string' ? 'debounce' : 'job-control',
      });
      return false;
    }
    await this.deps.republisher.delayed(delivery, verdict, {});
    return false;
  }
}
