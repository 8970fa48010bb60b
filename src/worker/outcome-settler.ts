import { CircuitOpenError, type EmitEvent, type ListensTo, type Logger } from '../core';
import type { IdempotencyStore } from '../idempotency';
import { HEADERS } from '../message';
import { decideFailure } from '../retry';
import { releaseClaim } from './claim-guard';
import type { DedupRelease } from './dedup-release';
import type { JobDelivery } from './delivery';
import type { RegisteredJob } from './registered-job';
import type { Republisher } from './republisher';
import { answerJob, type AnswerDeps } from './result-replier';
import type { RunOutcome } from './run-handler';

export interface OutcomeSettlerDeps {
  readonly republisher: Pick<Republisher, 'delayed' | 'deadLetter'>;
  readonly dedup: DedupRelease;
  readonly idempotency: Pick<IdempotencyStore, 'complete' | 'release'> | undefined;
  /** Where an awaited result's answer goes. */
  readonly answers: AnswerDeps;
  readonly emit: EmitEvent;
  /** Whether anyone listens to `event`: the `completed` payload is built only then. */
  readonly listens: ListensTo;
  readonly log: Logger;
  /** How long a job refused by an open breaker waits, ms (`worker.postponeDelayMs`). */
  readonly postponeDelayMs: number;
  /** Whether the broker delays a rejected delivery (quorum `x-delayed-retry-*`, RabbitMQ 4.3+). */
  readonly inPlaceRetries: () => boolean;
}

/** An ordered partition's retry: the worker holds the delivery for `delayMs`, then runs `nextAttempt`. */
export interface RetryHere {
  readonly delayMs: number;
  readonly nextAttempt: number;
}

/**
 * The end of one run: a completed job is recorded, acked and answered; an aborted one goes back to its
 * queue; a failed one is retried, postponed or dead-lettered as the retry policy (decideFailure) decides.
 */
export class OutcomeSettler {
  constructor(private readonly deps: OutcomeSettlerDeps) {}

  /** Settles the run's outcome, then ends the delivery's instrumentation scope, if any. */
  settle(
    delivery: JobDelivery,
    registered: RegisteredJob,
    outcome: RunOutcome,
  ): Promise<RetryHere | undefined> {
    const settled = this.settleOutcome(delivery, registered, outcome);
    const scope = delivery.scope;
    if (scope === undefined) return settled;
    return settled.finally(() =>
      scope.end(
        outcome.kind === 'failed' ? { kind: 'failed', error: outcome.error } : { kind: outcome.kind },
      ),
    );
  }

  private async settleOutcome(
    delivery: JobDelivery,
    registered: RegisteredJob,
    outcome: RunOutcome,
  ): Promise<RetryHere | undefined> {
    const { job } = delivery;
    const { idempotency } = this.deps;
    if (outcome.kind === 'aborted') {
      if (idempotency) await releaseClaim(idempotency, delivery, this.deps.log);
      delivery.requeue();
      return;
    }
    if (outcome.kind === 'completed') {
      if (idempotency)
        await idempotency
          .complete(job.jobId)
          .catch((error: unknown) =>
            this.deps.log.warn({ err: error, ...delivery.eventBase() }, 'could not record the completion'),
          );
      delivery.ack();
      this.deps.dedup.release(delivery);
      answerJob(this.deps.answers, delivery, { status: 'completed', result: outcome.result });
      if (this.deps.listens('completed', job.jobId, job.name, delivery.queue.key))
        this.deps.emit('completed', {
          ...delivery.eventBase(),
          durationMs: Date.now() - delivery.startedAt,
          result: outcome.result,
          body: delivery.message.content,
        });
      return;
    }
    if (idempotency) await releaseClaim(idempotency, delivery, this.deps.log);
    return this.handleFailure(delivery, registered, outcome.error);
  }

  private async handleFailure(
    delivery: JobDelivery,
    registered: RegisteredJob,
    error: unknown,
  ): Promise<RetryHere | undefined> {
    const { job } = delivery;
    const carried: Record<string, unknown> = {};
    delivery.scope?.carry(carried);
    const decision = decideFailure({
      attempt: job.attempt,
      // Checked by triage: the job's own attempts, never above its handler's.
      maxAttempts: job.maxAttempts ?? registered.attempts,
      backoff: registered.backoff,
      error,
      postponeDelayMs: this.deps.postponeDelayMs,
    });
    if (decision.action === 'postpone') return this.postpone(delivery, decision.delayMs, error, carried);
    const base = delivery.eventBase();
    const { republisher } = this.deps;
    // the failed attempt's run time, for the events and the history (the dashboard's recent failures)
    const ran = delivery.startedAt > 0 ? { durationMs: Date.now() - delivery.startedAt } : {};
    // a retry is the common failure: its event and log line are built only for someone to read
    if (this.deps.listens('failed', job.jobId, job.name, delivery.queue.key))
      this.deps.emit('failed', { ...base, ...ran, error, willRetry: decision.action === 'retry' });
    if (decision.action === 'dead-letter') {
      this.deps.dedup.release(delivery);
      answerJob(this.deps.answers, delivery, { status: 'failed', error });
      await republisher.deadLetter(delivery, decision.reason, error, carried);
      return undefined;
    }
    if (this.deps.log.isLevelEnabled?.('info') !== false)
      this.deps.log.info({ ...base, err: error, delayMs: decision.delayMs }, 'attempt failed; retrying');
    // built only for someone to read, like `failed`: on every retry, as many objects as the republish
    const retried = () =>
      this.deps.listens('retried', job.jobId, job.name, delivery.queue.key) &&
      this.deps.emit('retried', {
        ...base,
        ...ran,
        error,
        delayMs: decision.delayMs,
        nextAttempt: decision.nextAttempt,
        body: delivery.message.content,
      });
    if (delivery.queue.lane?.ordered) {
      // An ordered partition retries in the worker: a republish would put the job behind its key's later jobs.
      retried();
      return { delayMs: decision.delayMs, nextAttempt: decision.nextAttempt };
    }
    if (delivery.queue.inPlaceRetryMs === decision.delayMs && this.deps.inPlaceRetries()) {
      // The broker keeps the message and redelivers it after the queue's delay, its x-delivery-count one
      // higher (the next attempt): nothing to republish, nothing to confirm.
      delivery.retryInPlace();
      retried();
      return;
    }
    carried[HEADERS.attempt] = decision.nextAttempt;
    if (await republisher.delayed(delivery, decision.delayMs, carried)) retried();
  }

  /** An open breaker's failure: the job waits out the breaker, its attempt not spent. */
  private async postpone(
    delivery: JobDelivery,
    delayMs: number,
    error: unknown,
    carried: Record<string, unknown>,
  ): Promise<undefined> {
    const breaker = error instanceof CircuitOpenError ? error.breaker : 'unknown';
    if (await this.deps.republisher.delayed(delivery, delayMs, carried))
      this.deps.emit('postponed', { ...delivery.eventBase(), delayMs, breaker });
    return undefined;
  }
}
