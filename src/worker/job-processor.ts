import type * as amqp from 'amqplib';
import {
  PayloadValidationError,
  validatePayload,
  type BreakerHandle,
  type EmitEvent,
  type Instrumentation,
  type WarrenEvents,
  type JobContext,
  type Logger,
} from '../core';
import type { ConfirmPublisher } from '../connection';
import { HEADERS, type DecodedJob } from '../message';
import type { PlannedJobQueue, TopologyPlan } from '../topology';
export type { Settler } from './republisher';
import {
  decideClaim,
  decideRedelivery,
  isVerdict,
  triageDelivery,
  type DeliveryVerdict,
} from './delivery-triage';
import type { ClaimResult, IdempotencyGuard } from './idempotency-guard';
import type { ResolvedWorkerOptions } from './options';
import type { PermitGate } from '../coordination';
import { eventBase, OutcomeSettler } from './outcome-settler';
import type { RegisteredJob } from './registered-job';
import { JobRunContext } from './job-run-context';
import { processInfo } from './process-info';
import { Republisher, type Settler } from './republisher';
import { runHandler, type RunningJob } from './run-handler';

/** A claim outlives the job's timeout by this much, so a slow finish is not mistaken for a dead worker. */
const CLAIM_MARGIN_MS = 30_000;

export interface ProcessorDeps {
  readonly plan: TopologyPlan;
  readonly jobs: ReadonlyMap<string, RegisteredJob>;
  readonly confirms: ConfirmPublisher;
  /** The proof headers of an awaited result's answer (bound to its job id); none without a signing key. */
  readonly proveAnswer?: (content: Buffer, jobId: string) => Record<string, string>;
  readonly options: ResolvedWorkerOptions;
  readonly emit: EmitEvent;
  /**
   * Whether anyone listens to `event`: the per-job `completed` payload is built only then (it was 2 µs of a 9
   * µs no-op job).
   */
  readonly listens: (event: keyof WarrenEvents) => boolean;
  readonly log: Logger;
  readonly publishJob: JobContext['publish'];
  /** The named breaker, for a job of `queue` (a queue whose jobs use a breaker pauses while it is open). */
  readonly breaker: (name: string, queue: string) => BreakerHandle;
  readonly idempotency: IdempotencyGuard | undefined;
  /** Releases the id of a job published with `deduplicate` when it ends (README, "Deduplicated publishing"). */
  readonly deduplication?: { release(jobId: string): Promise<void> } | undefined;
  /** The rate limit a job must take a permit from before it runs (`@Job({ limiter })`), if any. */
  readonly limiterFor?: (jobName: string) => PermitGate | undefined;
  /**
   * Job control (README, "Cancel, promote, reschedule"): what to do with a delayed job that came due:
   * run it, drop it (cancelled) or re-delay it by this many ms. Asked only of jobs with `warren-delayed`.
   */
  readonly jobControl?: {
    decide(jobId: string, copy: unknown, now: number): Promise<'run' | 'drop' | number>;
    /** Reads the control stream ahead, so that the first delayed job does not wait for that read. */
    readAhead?(): Promise<void>;
  };
  /** Metrics and traces around each handler run (warren/observability), if set. */
  readonly instrumentation?: Instrumentation | undefined;
}

/**
 * The life of one delivery: decode, dispatch on `type`, run the handler, then carry out what the
 * retry policy decides. Every path settles the delivery exactly once; a message that cannot run is
 * dead-lettered with its reason, never requeued in a loop. Republishes (retries, dead letters) are
 * confirmed by the broker before the original is acked: at-least-once, never at-most-once.
 */
export class JobProcessor {
  private readonly republisher: Republisher;
  private readonly settler: OutcomeSettler;

  constructor(private readonly deps: ProcessorDeps) {
    this.republisher = new Republisher(deps);
    this.settler = new OutcomeSettler(deps, this.republisher);
  }

  async process(
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
    settle: Settler,
    track: (running: RunningJob) => void,
  ): Promise<void> {
    const now = Date.now();
    const triaged = triageDelivery(message, queue, this.deps.jobs, this.deps.options.maxBodyBytes, now);
    if (isVerdict(triaged)) {
      await this.carryOut(message, queue, settle, triaged);
      return;
    }
    const job = triaged;
    if (this.deps.jobControl && message.properties.headers?.[HEADERS.delayed] !== undefined)
      if (!(await this.controlled(message, queue, settle, job, now))) return;
    if (queue.type === 'classic' && message.fields.redelivered) {
      await this.carryOut(message, queue, settle, decideRedelivery(job, this.deps.options.redeliveryLimit));
      return;
    }
    const registered = this.deps.jobs.get(job.name)!;
    let data = job.data;
    if (registered.schema) {
      const result = await validatePayload(registered.schema, data);
      if (result.issues) {
        const error = new PayloadValidationError(job.name, result.issues);
        return this.republisher.deadLetter(message, queue, settle, 'invalid-payload', error, job);
      }
      data = result.value;
    }
    const limiter = this.deps.limiterFor?.(job.name);
    if (limiter && !(await this.takePermit(limiter, message, queue, settle, job))) return;
    if (this.deps.idempotency && !(await this.claim(message, queue, settle, job, registered.timeoutMs)))
      return;
    const maxAttempts = job.maxAttempts ?? registered.attempts;
    const scope = this.deps.instrumentation?.process?.(processInfo(message, queue, job));
    const started = Date.now();
    if (this.deps.listens('started')) this.deps.emit('started', eventBase(job, queue));
    let context: JobRunContext | undefined;
    const running = runHandler(
      registered.handler,
      data,
      (signal) => {
        context = this.context(job, queue, maxAttempts, message, signal);
        return context;
      },
      registered.timeoutMs,
      scope,
    );
    track(running);
    const outcome = await running.outcome;
    context?.endProgress();
    return this.settler.settle(message, queue, settle, job, registered, maxAttempts, started, outcome, scope);
  }

  /**
   * True once a rate-limit permit is taken. When none comes within the limiter's wait, the job is
   * re-delayed by about a window without spending an attempt, which frees its worker slot for the
   * queue's other jobs; on shutdown it goes back to its queue.
   */
  private async takePermit(
    limiter: PermitGate,
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
    settle: Settler,
    job: DecodedJob,
  ): Promise<boolean> {
    const outcome = await limiter.acquire();
    if (outcome === 'granted') return true;
    if (outcome === 'closed') {
      settle.requeue();
      return false;
    }
    const base = eventBase(job, queue);
    const delayMs = limiter.postponeDelayMs();
    if (await this.republisher.delayed(message, queue, settle, delayMs, {}, base))
      this.deps.emit('rateLimited', { ...base, limiter: limiter.key, delayMs });
    return false;
  }

  /**
   * True when this delivery may run; otherwise it was settled here (a duplicate, or postponed while another
   * worker runs it).
   */
  private async claim(
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
    settle: Settler,
    job: DecodedJob,
    timeoutMs: number,
  ): Promise<boolean> {
    const base = eventBase(job, queue);
    let claim: ClaimResult;
    try {
      claim = await this.deps.idempotency!.claim(job.jobId, timeoutMs + CLAIM_MARGIN_MS);
    } catch (error) {
      // Re-delayed rather than requeued: a requeue counts against the queue's delivery limit, so a
      // store outage of a few seconds would dead-letter every job that arrived meanwhile.
      const delayMs = this.deps.options.postponeDelayMs;
      this.deps.log.error(
        { ...base, err: error, delayMs },
        'idempotency store unavailable; postponing the job without spending an attempt',
      );
      await this.republisher.delayed(message, queue, settle, delayMs, {}, base);
      return false;
    }
    const decided = decideClaim(claim, this.deps.plan.delay.unitMs);
    if (decided === 'run') return true;
    if (decided === 'duplicate') {
      settle.ack();
      this.deps.log.info(base, 'duplicate of a completed job; acked without running');
      this.deps.emit('duplicate', base);
      return false;
    }
    await this.republisher.delayed(message, queue, settle, decided, {}, base);
    return false;
  }

  /** False when job control settled the job: cancelled (acked, `cancelled`) or rescheduled (re-delayed). */
  private async controlled(
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
    settle: Settler,
    job: DecodedJob,
    now: number,
  ): Promise<boolean> {
    let verdict: 'run' | 'drop' | number;
    try {
      verdict = await this.deps.jobControl!.decide(
        job.jobId,
        message.properties.headers?.[HEADERS.controlCopy],
        now,
      );
    } catch (error) {
      // Never run a job that may be cancelled: wait for the control stream as for an open breaker.
      this.deps.log.warn({ err: error, ...eventBase(job, queue) }, 'job control unreadable; job postponed');
      verdict = this.deps.options.postponeDelayMs;
    }
    if (verdict === 'run') return true;
    if (verdict === 'drop') {
      settle.ack();
      this.settler.releaseDedup(message, job);
      this.deps.emit('cancelled', eventBase(job, queue));
      return false;
    }
    await this.republisher.delayed(message, queue, settle, verdict, {}, eventBase(job, queue));
    return false;
  }

  /** Dead-letters or re-delays a delivery that does not run now. */
  private carryOut(
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
    settle: Settler,
    verdict: DeliveryVerdict,
  ): Promise<unknown> {
    if (verdict.action === 'dead-letter')
      return this.republisher.deadLetter(message, queue, settle, verdict.reason, verdict.error, verdict.job);
    const base = eventBase(verdict.job, queue);
    return this.republisher.delayed(message, queue, settle, verdict.delayMs, verdict.headers ?? {}, base);
  }

  private context(
    job: DecodedJob,
    queue: PlannedJobQueue,
    maxAttempts: number,
    message: amqp.ConsumeMessage,
    signal: () => AbortSignal,
  ): JobRunContext {
    return new JobRunContext(
      job,
      queue.key,
      maxAttempts,
      message.fields.redelivered,
      this.deps.publishJob,
      this.deps.log,
      signal,
      this.deps.breaker,
      (progress) => {
        if (this.deps.listens('progress')) this.deps.emit('progress', { ...eventBase(job, queue), progress });
      },
    );
  }
}
