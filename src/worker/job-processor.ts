import type * as amqp from 'amqplib';
import {
  PayloadValidationError,
  validatePayload,
  UnknownJobError,
  CircuitOpenError,
  DecodeError,
  type BreakerHandle,
  type EmitEvent,
  type Instrumentation,
  type JobEventBase,
  type ProcessScope,
  type WarrenEvents,
  type JobContext,
  type Logger,
} from '../core';
import type { ConfirmPublisher } from '../connection';
import { decodeJob, HEADERS, type DecodedJob } from '../message';
import { decideFailure } from '../retry';
import type { PlannedQueue, TopologyPlan } from '../topology';
export type { Settler } from './republisher';
import type { ClaimResult, IdempotencyGuard } from './idempotency-guard';
import type { ResolvedWorkerOptions } from './options';
import type { PermitGate } from './rate-limiter';
import type { RegisteredJob } from './registered-job';
import { checkDelivery, isRefusal } from './delivery-checks';
import { JobRunContext } from './job-run-context';
import { processInfo } from './process-info';
import { Republisher, type Settler } from './republisher';
import { answerJob } from './result-replier';
import { runHandler, type RunOutcome, type RunningJob } from './run-handler';

/** A claim outlives the job's timeout by this much, so a slow finish is not mistaken for a dead worker. */
const CLAIM_MARGIN_MS = 30_000;
/** Classic queues: a redelivered job re-enters its queue after this many ms times its redelivery count. */
const REDELIVERY_BACKOFF_MS = 1_000;

export interface ProcessorDeps {
  readonly plan: TopologyPlan;
  readonly jobs: ReadonlyMap<string, RegisteredJob>;
  readonly publisher: ConfirmPublisher;
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

  constructor(private readonly deps: ProcessorDeps) {
    this.republisher = new Republisher(deps);
  }

  async process(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
    settle: Settler,
    track: (running: RunningJob) => void,
  ): Promise<void> {
    const now = Date.now();
    const maxBodyBytes = this.deps.options.maxBodyBytes;
    if (message.content.length > maxBodyBytes) {
      const error = new DecodeError(
        `body of ${message.content.length} bytes is over worker.maxBodyBytes (${maxBodyBytes}); not parsed`,
        { queue: queue.key! },
      );
      return this.republisher.deadLetter(message, queue, settle, 'too-large', error, undefined);
    }
    let decoded: DecodedJob;
    try {
      decoded = decodeJob(message, now);
    } catch (error) {
      return this.republisher.deadLetter(message, queue, settle, 'undecodable', error, undefined);
    }
    const registered = this.deps.jobs.get(decoded.name);
    if (registered === undefined) {
      const known = [...this.deps.jobs.keys()];
      const error = new UnknownJobError(decoded.name, { queue: queue.key!, known });
      return this.republisher.deadLetter(message, queue, settle, 'unknown-job', error, decoded);
    }
    const checked = checkDelivery(decoded, registered, queue.name, queue.key!, now);
    if (isRefusal(checked))
      return this.republisher.deadLetter(message, queue, settle, checked.reason, checked.error, decoded);
    const job = checked;
    if (job.deliverAt !== undefined && job.deliverAt > now) {
      await this.redelay(message, queue, settle, job, job.deliverAt - now);
      return;
    }
    if (this.deps.jobControl && message.properties.headers?.[HEADERS.delayed] !== undefined)
      if (!(await this.controlled(message, queue, settle, job, now))) return;
    if (queue.type === 'classic' && message.fields.redelivered)
      return this.countRedelivery(message, queue, settle, job);
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
    if (scope === undefined)
      return this.settleOutcome(message, queue, settle, job, registered, maxAttempts, started, outcome);
    try {
      await this.settleOutcome(message, queue, settle, job, registered, maxAttempts, started, outcome, scope);
    } finally {
      scope.end(
        outcome.kind === 'failed' ? { kind: 'failed', error: outcome.error } : { kind: outcome.kind },
      );
    }
  }

  private async settleOutcome(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
    settle: Settler,
    job: DecodedJob,
    registered: RegisteredJob,
    maxAttempts: number,
    started: number,
    outcome: RunOutcome,
    scope?: ProcessScope,
  ): Promise<void> {
    if (outcome.kind === 'aborted') {
      if (this.deps.idempotency) await this.deps.idempotency.release(job.jobId).catch(() => undefined);
      settle.requeue();
      return;
    }
    if (outcome.kind === 'completed') {
      if (this.deps.idempotency)
        await this.deps.idempotency
          .complete(job.jobId)
          .catch((error: unknown) =>
            this.deps.log.warn({ err: error, ...eventBase(job, queue) }, 'could not record the completion'),
          );
      settle.ack();
      this.releaseDedup(message, job);
      answerJob(this.deps.publisher, this.deps.log, message, job.jobId, {
        status: 'completed',
        result: outcome.result,
      });
      if (this.deps.listens('completed'))
        this.deps.emit('completed', {
          ...eventBase(job, queue),
          durationMs: Date.now() - started,
          result: outcome.result,
        });
      return;
    }
    if (this.deps.idempotency)
      await this.deps.idempotency
        .release(job.jobId)
        .catch((error: unknown) =>
          this.deps.log.warn({ err: error, ...eventBase(job, queue) }, 'could not release the claim'),
        );
    await this.handleFailure(message, queue, settle, job, registered, maxAttempts, outcome.error, scope);
  }

  /**
   * True once a rate-limit permit is taken. When none comes within the limiter's wait, the job is
   * re-delayed by about a window without spending an attempt, which frees its worker slot for the
   * queue's other jobs; on shutdown it goes back to its queue.
   */
  private async takePermit(
    limiter: PermitGate,
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
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
    queue: PlannedQueue,
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
    if (claim.status === 'claimed') return true;
    if (claim.status === 'completed') {
      settle.ack();
      this.deps.log.info(base, 'duplicate of a completed job; acked without running');
      this.deps.emit('duplicate', base);
      return false;
    }
    await this.republisher.delayed(
      message,
      queue,
      settle,
      Math.max(this.deps.plan.delay.unitMs, claim.retryInMs),
      {},
      base,
    );
    return false;
  }

  private async handleFailure(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
    settle: Settler,
    job: DecodedJob,
    registered: RegisteredJob,
    maxAttempts: number,
    error: unknown,
    scope: ProcessScope | undefined,
  ): Promise<void> {
    const carried: Record<string, unknown> = {};
    scope?.carry(carried);
    const decision = decideFailure({
      attempt: job.attempt,
      maxAttempts,
      backoff: registered.backoff,
      error,
      postponeDelayMs: this.deps.options.postponeDelayMs,
    });
    const base = eventBase(job, queue);
    if (decision.action === 'postpone') {
      const breaker = error instanceof CircuitOpenError ? error.breaker : 'unknown';
      if (await this.republisher.delayed(message, queue, settle, decision.delayMs, carried, base)) {
        this.deps.emit('postponed', { ...base, delayMs: decision.delayMs, breaker });
      }
      return;
    }
    this.deps.emit('failed', { ...base, error, willRetry: decision.action === 'retry' });
    if (decision.action === 'dead-letter') {
      this.releaseDedup(message, job);
      answerJob(this.deps.publisher, this.deps.log, message, job.jobId, { status: 'failed', error });
      return this.republisher.deadLetter(message, queue, settle, decision.reason, error, job, carried);
    }
    this.deps.log.info({ ...base, err: error, delayMs: decision.delayMs }, 'attempt failed; retrying');
    if (
      await this.republisher.delayed(
        message,
        queue,
        settle,
        decision.delayMs,
        { ...carried, [HEADERS.attempt]: decision.nextAttempt },
        base,
      )
    ) {
      this.deps.emit('retried', {
        ...base,
        error,
        delayMs: decision.delayMs,
        nextAttempt: decision.nextAttempt,
      });
    }
  }

  /** False when job control settled the job: cancelled (acked, `cancelled`) or rescheduled (re-delayed). */
  private async controlled(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
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
      this.releaseDedup(message, job);
      this.deps.emit('cancelled', eventBase(job, queue));
      return false;
    }
    await this.redelay(message, queue, settle, job, verdict);
    return false;
  }

  /** Delays longer than one pass through the levels carry their due time and re-enter the levels. */
  private redelay(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
    settle: Settler,
    job: DecodedJob,
    remainingMs: number,
  ): Promise<unknown> {
    return this.republisher.delayed(message, queue, settle, remainingMs, {}, eventBase(job, queue));
  }

  private async countRedelivery(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
    settle: Settler,
    job: DecodedJob,
  ): Promise<void> {
    const count = job.redeliveries + 1;
    const context = eventBase(job, queue);
    if (count >= this.deps.options.redeliveryLimit) {
      return this.republisher.deadLetter(
        message,
        queue,
        settle,
        'delivery-limit',
        new Error(
          `delivered ${count + 1} times without being settled (the worker crashed or lost its channel each time)`,
        ),
        job,
      );
    }
    // The copy waits a moment in the delay levels: time for the original's ack to reach the broker
    // before a crash-looping job can take the process down again, and a backoff for the loop itself.
    await this.republisher.delayed(
      message,
      queue,
      settle,
      Math.min(REDELIVERY_BACKOFF_MS * count, 10_000),
      { [HEADERS.redeliveries]: count },
      context,
    );
  }

  /** Only for a job published with `deduplicate` (its `warren-dedup` header): no store call otherwise. */
  private releaseDedup(message: amqp.ConsumeMessage, job: DecodedJob): void {
    const store = this.deps.deduplication;
    if (store === undefined || message.properties.headers?.[HEADERS.dedup] === undefined) return;
    store
      .release(job.jobId)
      .catch((error: unknown) =>
        this.deps.log.warn({ err: error, jobId: job.jobId }, 'could not release the deduplicated job id'),
      );
  }

  private context(
    job: DecodedJob,
    queue: PlannedQueue,
    maxAttempts: number,
    message: amqp.ConsumeMessage,
    signal: () => AbortSignal,
  ): JobRunContext {
    return new JobRunContext(
      job,
      queue.key!,
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

function eventBase(job: DecodedJob, queue: PlannedQueue): JobEventBase {
  return { jobId: job.jobId, name: job.name, queue: queue.key!, attempt: job.attempt };
}
