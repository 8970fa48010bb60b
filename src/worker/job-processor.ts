import type * as amqp from 'amqplib';
import {
  formatIssuePath,
  PayloadValidationError,
  PublishError,
  UnknownJobError,
  CircuitOpenError,
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
import {
  deadLetterProperties,
  decodeJob,
  HEADERS,
  republishProperties,
  withOwnHeadersOnly,
  type DeadReason,
  type DecodedJob,
} from '../message';
import { decideFailure } from '../retry';
import { delayRoute, type PlannedQueue, type TopologyPlan } from '../topology';
import type { ClaimResult, IdempotencyGuard } from './idempotency-guard';
import type { ResolvedWorkerOptions } from './options';
import type { PermitGate } from './rate-limiter';
import type { RegisteredJob } from './registered-job';
import { JobRunContext } from './job-run-context';
import { processInfo } from './process-info';
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
  /** The rate limit a job must take a permit from before it runs (`@Job({ limiter })`), if any. */
  readonly limiterFor?: (jobName: string) => PermitGate | undefined;
  /** Metrics and traces around each handler run (warren/observability), if set. */
  readonly instrumentation?: Instrumentation | undefined;
}

/** How the consumer settles one delivery on the channel it came from. */
export interface Settler {
  /**
   * `immediate` sends the ack now instead of with the next batch: used after a republish, whose copy
   * may come back before the batch goes out (a crash in between would leave both copies alive).
   */
  ack(immediate?: boolean): void;
  requeue(): void;
}

/**
 * The life of one delivery: decode, dispatch on `type`, run the handler, then carry out what the
 * retry policy decides. Every path settles the delivery exactly once; a message that cannot run is
 * dead-lettered with its reason, never requeued in a loop. Republishes (retries, dead letters) are
 * confirmed by the broker before the original is acked: at-least-once, never at-most-once.
 */
export class JobProcessor {
  constructor(private readonly deps: ProcessorDeps) {}

  async process(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
    settle: Settler,
    track: (running: RunningJob) => void,
  ): Promise<void> {
    const now = Date.now();
    let job: DecodedJob;
    try {
      job = decodeJob(message, now);
    } catch (error) {
      return this.deadLetter(message, queue, settle, 'undecodable', error, undefined);
    }
    const registered = this.deps.jobs.get(job.name);
    if (registered === undefined) {
      const error = new UnknownJobError(job.name, { queue: queue.key!, known: [...this.deps.jobs.keys()] });
      return this.deadLetter(message, queue, settle, 'unknown-job', error, job);
    }
    if (job.deliverAt !== undefined && job.deliverAt > now) {
      await this.redelay(message, queue, settle, job, job.deliverAt - now);
      return;
    }
    if (queue.type === 'classic' && message.fields.redelivered)
      return this.countRedelivery(message, queue, settle, job);
    let data = job.data;
    if (registered.schema) {
      const result = await registered.schema['~standard'].validate(data);
      if (result.issues) {
        const error = new PayloadValidationError(
          job.name,
          result.issues.map((i) => ({
            message: i.message,
            ...(formatIssuePath(i) ? { path: formatIssuePath(i)! } : {}),
          })),
        );
        return this.deadLetter(message, queue, settle, 'invalid-payload', error, job);
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
    const running = runHandler(
      registered.handler,
      data,
      (signal) => this.context(job, queue, maxAttempts, message, signal),
      registered.timeoutMs,
      scope,
    );
    track(running);
    const outcome = await running.outcome;
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
    if (await this.republishDelayed(message, queue, settle, delayMs, {}, base))
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
      await this.republishDelayed(message, queue, settle, delayMs, {}, base);
      return false;
    }
    if (claim.status === 'claimed') return true;
    if (claim.status === 'completed') {
      settle.ack();
      this.deps.log.info(base, 'duplicate of a completed job; acked without running');
      this.deps.emit('duplicate', base);
      return false;
    }
    await this.republishDelayed(
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
      if (await this.republishDelayed(message, queue, settle, decision.delayMs, carried, base)) {
        this.deps.emit('postponed', { ...base, delayMs: decision.delayMs, breaker });
      }
      return;
    }
    this.deps.emit('failed', { ...base, error, willRetry: decision.action === 'retry' });
    if (decision.action === 'dead-letter')
      return this.deadLetter(message, queue, settle, decision.reason, error, job, carried);
    this.deps.log.info({ ...base, err: error, delayMs: decision.delayMs }, 'attempt failed; retrying');
    if (
      await this.republishDelayed(
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

  /** Delays longer than one pass through the levels carry their due time and re-enter the levels. */
  private redelay(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
    settle: Settler,
    job: DecodedJob,
    remainingMs: number,
  ): Promise<unknown> {
    return this.republishDelayed(message, queue, settle, remainingMs, {}, eventBase(job, queue));
  }

  private async republishDelayed(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
    settle: Settler,
    delayMs: number,
    headers: Record<string, unknown>,
    context: { jobId: string; name: string; queue: string; attempt: number },
  ): Promise<boolean> {
    const delay = this.deps.plan.delay;
    const changes: Record<string, unknown> = {
      ...headers,
      [HEADERS.deliverAt]: delayMs > delay.maxDelayMs ? Date.now() + delayMs : undefined,
    };
    const route =
      delayMs > 0 ? delayRoute(delay, delayMs, queue.name) : { exchange: '', routingKey: queue.name };
    return this.republish(
      message,
      settle,
      route.exchange,
      route.routingKey,
      republishProperties(message.properties, changes),
      context,
    );
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
      return this.deadLetter(
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
    await this.republishDelayed(
      message,
      queue,
      settle,
      Math.min(REDELIVERY_BACKOFF_MS * count, 10_000),
      { [HEADERS.redeliveries]: count },
      context,
    );
  }

  private async deadLetter(
    message: amqp.ConsumeMessage,
    queue: PlannedQueue,
    settle: Settler,
    reason: DeadReason,
    error: unknown,
    job: DecodedJob | undefined,
    carried?: Record<string, unknown>,
  ): Promise<void> {
    const attempt = job?.attempt ?? 1;
    const context = {
      jobId: job?.jobId ?? String(message.properties.messageId ?? ''),
      name: job?.name ?? message.properties.type,
      queue: queue.key!,
      attempt,
    };
    const properties = deadLetterProperties(message.properties, {
      reason,
      error,
      queue: queue.key!,
      attempt,
      deadAt: Date.now(),
    });
    if (carried !== undefined) Object.assign(properties.headers!, carried);
    if (
      await this.republish(message, settle, queue.deadExchange!, queue.name, properties, {
        ...context,
        name: context.name ?? '',
      })
    ) {
      this.deps.log.warn({ ...context, reason, err: error }, 'job dead-lettered');
      this.deps.emit('deadLettered', { ...context, name: context.name, reason, error });
    }
  }

  /**
   * Confirm first, then ack. If the broker does not confirm, the original goes back to the queue.
   * A message whose own headers cannot be encoded again (a foreign table near amqplib's 64 KiB limit
   * that warren's headers push over it, a value of no AMQP type) travels on with warren's headers
   * only: requeued as it is, it would fail the same way on every delivery.
   */
  private async republish(
    message: amqp.ConsumeMessage,
    settle: Settler,
    exchange: string,
    routingKey: string,
    properties: amqp.Options.Publish,
    context: { jobId: string; name: string; queue: string; attempt: number },
  ): Promise<boolean> {
    const send = (props: amqp.Options.Publish) =>
      this.deps.publisher.send({
        exchange,
        routingKey,
        content: message.content,
        properties: props,
        deadline: Date.now() + this.deps.options.republishTimeoutMs,
        context: {
          jobId: context.jobId,
          jobName: context.name,
          queue: context.queue,
          attempt: context.attempt,
        },
      });
    try {
      await send(properties).catch((error: unknown) => {
        if (!(error instanceof PublishError && error.code === 'PUBLISH_UNENCODABLE')) throw error;
        this.deps.log.warn(
          { ...context, err: error },
          "the message's headers cannot be republished; it goes on with warren's headers only",
        );
        return send(withOwnHeadersOnly(properties));
      });
      settle.ack(true);
      return true;
    } catch (error) {
      this.deps.log.error(
        { ...context, err: error },
        'republish was not confirmed; returning the job to its queue',
      );
      settle.requeue();
      return false;
    }
  }

  private context(
    job: DecodedJob,
    queue: PlannedQueue,
    maxAttempts: number,
    message: amqp.ConsumeMessage,
    signal: () => AbortSignal,
  ): JobContext {
    return new JobRunContext(
      job,
      queue.key!,
      maxAttempts,
      message.fields.redelivered,
      this.deps.publishJob,
      this.deps.log,
      signal,
      this.deps.breaker,
    );
  }
}

function eventBase(job: DecodedJob, queue: PlannedQueue): JobEventBase {
  return { jobId: job.jobId, name: job.name, queue: queue.key!, attempt: job.attempt };
}
