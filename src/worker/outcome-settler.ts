import type * as amqp from 'amqplib';
import { CircuitOpenError, type JobEventBase, type ProcessScope } from '../core';
import { HEADERS, type DecodedJob } from '../message';
import { decideFailure } from '../retry';
import type { PlannedJobQueue } from '../topology';
import type { ProcessorDeps } from './job-processor';
import type { RegisteredJob } from './registered-job';
import type { Republisher, Settler } from './republisher';
import { answerJob } from './result-replier';
import type { RunOutcome } from './run-handler';

/**
 * The end of one run: a completed job is recorded, acked and answered; an aborted one goes back to its
 * queue; a failed one is retried, postponed or dead-lettered as the retry policy (decideFailure) decides.
 */
export class OutcomeSettler {
  constructor(
    private readonly deps: ProcessorDeps,
    private readonly republisher: Republisher,
  ) {}

  /** Settles the run's outcome, then ends its instrumentation scope, if any. */
  settle(
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
    settle: Settler,
    job: DecodedJob,
    registered: RegisteredJob,
    maxAttempts: number,
    started: number,
    outcome: RunOutcome,
    scope: ProcessScope | undefined,
  ): Promise<void> {
    const settled = this.settleOutcome(
      message,
      queue,
      settle,
      job,
      registered,
      maxAttempts,
      started,
      outcome,
      scope,
    );
    if (scope === undefined) return settled;
    return settled.finally(() =>
      scope.end(
        outcome.kind === 'failed' ? { kind: 'failed', error: outcome.error } : { kind: outcome.kind },
      ),
    );
  }

  private async settleOutcome(
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
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
      answerJob(this.deps, message, job.jobId, {
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

  private async handleFailure(
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
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
      answerJob(this.deps, message, job.jobId, { status: 'failed', error });
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

  /** Only for a job published with `deduplicate` (its `warren-dedup` header): no store call otherwise. */
  releaseDedup(message: amqp.ConsumeMessage, job: DecodedJob): void {
    const store = this.deps.deduplication;
    if (store === undefined || message.properties.headers?.[HEADERS.dedup] === undefined) return;
    store
      .release(job.jobId)
      .catch((error: unknown) =>
        this.deps.log.warn({ err: error, jobId: job.jobId }, 'could not release the deduplicated job id'),
      );
  }
}

export function eventBase(job: DecodedJob, queue: PlannedJobQueue): JobEventBase {
  return { jobId: job.jobId, name: job.name, queue: queue.key!, attempt: job.attempt };
}
