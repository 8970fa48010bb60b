import type * as amqp from 'amqplib';
import {
  PayloadValidationError,
  validatePayload,
  type EmitEvent,
  type Instrumentation,
  type ListensTo,
} from '../core';
import type { PermitGate } from '../coordination';
import { HEADERS, type DecodedJob } from '../message';
import { X_ARGS } from '../topology';
import type { ClaimGuard } from './claim-guard';
import type { Delivery } from './delivery';
import {
  decideRedelivery,
  isVerdict,
  triageDelivery,
  type DeliveryVerdict,
  type TriageRules,
} from './delivery-triage';
import type { JobControlGuard } from './job-control-guard';
import { JobRunContext, type JobRunContextDeps } from './job-run-context';
import type { OutcomeSettler } from './outcome-settler';
import type { PermitGuard } from './permit-guard';
import { processInfo } from './process-info';
import type { Republisher } from './republisher';
import type { IsolatePool } from './isolate-pool';
import type { BatchCollector } from './batch-collector';
import { runLimitMs } from './registered-job';
import { runHandler, waitInPlace } from './run-handler';
import { runIsolated } from './run-isolated';

/** The parts of the delivery path the processor hands a delivery to, each with its own narrow deps. */
export interface JobProcessorDeps {
  /** The jobs this worker runs and the largest body it parses. */
  readonly triage: TriageRules;
  /** Classic queues: deliveries of one job before it is dead-lettered as a crash loop. */
  readonly redeliveryLimit: number;
  /** Whether the broker delays a rejected delivery (quorum `x-delayed-retry-*`, RabbitMQ 4.3+). */
  readonly inPlaceRetries: () => boolean;
  readonly republisher: Pick<Republisher, 'delayed' | 'deadLetter'>;
  readonly settler: Pick<OutcomeSettler, 'settle'>;
  /** Without job control, delayed jobs run when they come due. */
  readonly jobControl: JobControlGuard | undefined;
  /** The rate limit a job must take a permit from before it runs (`@Job({ limiter })`), if any. */
  readonly limiterFor: ((jobName: string) => PermitGate | undefined) | undefined;
  readonly permits: PermitGuard;
  /** Without an idempotency store, every delivery runs. */
  readonly claims: ClaimGuard | undefined;
  /** What each handler's `ctx` reaches. */
  readonly context: JobRunContextDeps;
  readonly emit: EmitEvent;
  /** Whether anyone listens to `event`: the per-job `started` payload is built only then. */
  readonly listens: ListensTo;
  /** Metrics and traces around each handler run (warren/observability), if set. */
  readonly instrumentation: Instrumentation | undefined;
  /** The isolate pools of the jobs that do not run inline (`@Job({ isolate })`), by job name. */
  readonly isolates?: ReadonlyMap<string, IsolatePool> | undefined;
  /** The batch collectors of the jobs that run in batches (`@Job({ batch })`), by job name. */
  readonly batches?: ReadonlyMap<string, BatchCollector> | undefined;
}

/** The main-process ctx of an isolated job has no use for a signal: the isolate's ctx has its own. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * The life of one delivery: decode, dispatch on `type`, run the handler, then carry out what the
 * retry policy decides. Every path settles the delivery exactly once; a message that cannot run is
 * dead-lettered with its reason, never requeued in a loop. Republishes (retries, dead letters) are
 * confirmed by the broker before the original is acked: at-least-once, never at-most-once.
 *
 * In order: triage (pure: decode, check, due later?) → job control (a delayed job cancelled or
 * rescheduled meanwhile) → a classic queue's redelivery count → payload validation → rate-limit permit →
 * idempotency claim → the handler run (or, for a batch job, its batch's run: past every guard, so claims,
 * permits and validation count jobs) → the outcome settler. Each guard settles what it stops.
 */
export class JobProcessor {
  constructor(private readonly deps: JobProcessorDeps) {}

  // size-exception: the hot path stays one async function (each helper returning a promise adds hops per job)
  async process(delivery: Delivery): Promise<void> {
    const { deps } = this;
    const now = Date.now();
    const triaged = triageDelivery(delivery, deps.triage, now);
    if (isVerdict(triaged)) {
      await this.carryOut(delivery, triaged);
      return;
    }
    delivery.assignJob(
      delivery.queue.inPlaceRetryMs !== undefined && deps.inPlaceRetries()
        ? withInPlaceAttempts(triaged, delivery.message)
        : triaged,
    );
    const { job, message, queue } = delivery;
    if (deps.jobControl && message.properties.headers?.[HEADERS.delayed] !== undefined)
      if (!(await deps.jobControl.admit(delivery, now))) return;
    if (queue.type === 'classic' && message.fields.redelivered) {
      await this.carryOut(delivery, decideRedelivery(job, deps.redeliveryLimit));
      return;
    }
    for (;;) {
      const registered = deps.triage.jobs.get(job.name)!;
      let data = job.data;
      if (registered.schema) {
        const result = await validatePayload(registered.schema, data);
        if (result.issues) {
          const error = new PayloadValidationError(job.name, result.issues);
          return deps.republisher.deadLetter(delivery, 'invalid-payload', error);
        }
        data = result.value;
      }
      const limiter = deps.limiterFor?.(job.name);
      if (limiter && !(await deps.permits.admit(delivery, limiter))) return;
      if (deps.claims && !(await deps.claims.admit(delivery, runLimitMs(registered)))) return;
      // an ordered partition fenced during the guards' awaits: its delivery is the next owner's, unstarted
      if (delivery.checkOwnership !== undefined) {
        delivery.checkOwnership();
        if (delivery.lostReason !== undefined) {
          await deps.claims?.release(delivery);
          return delivery.requeue();
        }
      }
      // The run stays in this async function: a helper returning its promise would add promise hops per job.
      const scope = deps.instrumentation?.process?.(processInfo(delivery));
      const started = Date.now();
      if (deps.listens('started')) deps.emit('started', delivery.eventBase());
      const maxAttempts = job.maxAttempts ?? registered.attempts;
      let context: JobRunContext | undefined;
      const pool = deps.isolates?.get(job.name);
      if (pool !== undefined)
        context = new JobRunContext(delivery, maxAttempts, deps.context, () => NEVER_ABORTED);
      const running =
        registered.batch !== undefined
          ? deps.batches!.get(job.name)!.join(delivery, data, maxAttempts)
          : pool !== undefined && context !== undefined
            ? runIsolated(
                pool,
                { data, job: isolateJobInfo(context), breakers: registered.breakers },
                context,
              )
            : runHandler(
                registered,
                data,
                (signal, abort) => {
                  const check = delivery.checkOwnership;
                  context = new JobRunContext(
                    delivery,
                    maxAttempts,
                    deps.context,
                    check === undefined
                      ? signal
                      : () => {
                          check();
                          // this run may not be registered yet (the fence came from its own first read)
                          const lost = delivery.lostReason;
                          if (lost !== undefined) abort(lost);
                          return signal();
                        },
                  );
                  return context;
                },
                scope,
              );
      delivery.started(running, scope, started);
      const outcome = await running.outcome;
      context?.endProgress();
      const retry = await deps.settler.settle(delivery, registered, outcome);
      if (retry === undefined) return;
      // An ordered partition's retry in place: the delivery, and so its key, waits out the backoff here
      const hold = waitInPlace(retry.delayMs);
      delivery.started(hold, undefined, delivery.startedAt);
      if ((await hold.outcome).kind === 'aborted') {
        delivery.requeue();
        return;
      }
      delivery.assignJob({ ...delivery.job, attempt: retry.nextAttempt });
    }
  }

  /**
   * Re-delays a delivery whose key is at a per-key limit (docs/guide/per-key-limits.md) without spending an
   * attempt; `warren-limited` says which limit. A body that does not decode is dead-lettered as in `process`.
   */
  async defer(delivery: Delivery, delayMs: number, limit: 'concurrency' | 'rate'): Promise<void> {
    const triaged = triageDelivery(delivery, this.deps.triage, Date.now());
    if (isVerdict(triaged)) {
      await this.carryOut(delivery, triaged);
      return;
    }
    delivery.assignJob(triaged);
    if (await this.deps.republisher.delayed(delivery, delayMs, { [HEADERS.limited]: limit }))
      this.deps.emit('rateLimited', { ...delivery.eventBase(), limiter: `per-key ${limit}`, delayMs });
  }

  /** Dead-letters or re-delays a delivery that does not run now. */
  private carryOut(delivery: Delivery, verdict: DeliveryVerdict): Promise<unknown> {
    if (verdict.action === 'dead-letter') {
      if (verdict.job !== undefined) delivery.assignJob(verdict.job);
      return this.deps.republisher.deadLetter(delivery, verdict.reason, verdict.error);
    }
    delivery.assignJob(verdict.job);
    return this.deps.republisher.delayed(delivery, verdict.delayMs, verdict.headers ?? {});
  }
}

/**
 * On a queue that retries in place, each retry is the same message back (its `warren-attempt` unchanged)
 * with the broker's `x-delivery-count` one higher: the attempt is their sum. The count is the broker's only
 * on a redelivery; on a first delivery the header is whatever the publisher wrote, and is ignored.
 */
function withInPlaceAttempts(
  job: DecodedJob,
  message: Pick<amqp.Message, 'fields' | 'properties'>,
): DecodedJob {
  if (!message.fields.redelivered) return job;
  const count = message.properties.headers?.[X_ARGS.deliveryCount];
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1) return job;
  return { ...job, attempt: job.attempt + count };
}

/** The fields of an isolated handler's ctx, as they cross. */
function isolateJobInfo(ctx: JobRunContext) {
  return {
    jobId: ctx.jobId,
    name: ctx.name,
    attempt: ctx.attempt,
    maxAttempts: ctx.maxAttempts,
    queue: ctx.queue,
    headers: ctx.headers,
    enqueuedAt: ctx.enqueuedAt,
    redelivered: ctx.redelivered,
  };
}
