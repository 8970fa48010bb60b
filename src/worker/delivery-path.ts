import type { PermitGate } from '../coordination';
import type { BreakerHandle, EmitEvent, Instrumentation, JobContext, Logger, ListensTo } from '../core';
import type { ConfirmPublisher } from '../connection';
import type { IdempotencyStore } from '../idempotency';
import type { TopologyPlan } from '../topology';
import { ClaimGuard } from './claim-guard';
import { DedupRelease, type DedupReleaseStore } from './dedup-release';
import { JobControlGuard, type JobControlDecider } from './job-control-guard';
import { JobProcessor } from './job-processor';
import type { ResolvedWorkerOptions } from './options';
import { OutcomeSettler } from './outcome-settler';
import { PermitGuard } from './permit-guard';
import type { RegisteredJob } from './registered-job';
import { Republisher } from './republisher';
import type { IsolatePool } from './isolate-pool';
import { batchCollectors } from './batch-collectors';

/** Everything the delivery path uses, as the composition root hands it over; each part gets its slice. */
export interface DeliveryPathDeps {
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
  readonly listens: ListensTo;
  readonly log: Logger;
  readonly publishJob: JobContext['publish'];
  /** The named breaker, for a job of `queue` (a queue whose jobs use a breaker pauses while it is open). */
  readonly breaker: (name: string, queue: string) => BreakerHandle;
  readonly idempotency: Pick<IdempotencyStore, 'claim' | 'complete' | 'release'> | undefined;
  /** Releases the id of a job published with `deduplicate` when it ends (docs/guide/deduplication.md). */
  readonly deduplication?: DedupReleaseStore | undefined;
  /** The rate limit a job must take a permit from before it runs (`@Job({ limiter })`), if any. */
  readonly limiterFor?: (jobName: string) => PermitGate | undefined;
  /** Job control (docs/guide/job-control.md), if the warren has it. */
  readonly jobControl?: JobControlDecider;
  /** Metrics and traces around each handler run (warren/observability), if set. */
  readonly instrumentation?: Instrumentation | undefined;
  /** Whether the broker delays a rejected delivery (quorum `x-delayed-retry-*`, RabbitMQ 4.3+). */
  readonly inPlaceRetries?: () => boolean;
  /** The isolate pools of the jobs that do not run inline, by job name. */
  readonly isolates?: ReadonlyMap<string, IsolatePool>;
}

/**
 * The delivery path, wired once per worker: the republisher (retries, re-delays, dead letters), the
 * outcome settler, the guards before a run (job control, rate-limit permits, idempotency claims) and the
 * processor that hands each Delivery through them. Every part is built here with only what it uses.
 */
export function createJobProcessor(deps: DeliveryPathDeps): JobProcessor {
  const { emit, listens, log, options } = deps;
  const { postponeDelayMs } = options;
  const inPlaceRetries = deps.inPlaceRetries ?? (() => false);
  const republisher = new Republisher({
    delay: deps.plan.delay,
    confirms: deps.confirms,
    republishTimeoutMs: options.republishTimeoutMs,
    emit,
    log,
  });
  const dedup = new DedupRelease(deps.deduplication, log);
  const settler = new OutcomeSettler({
    republisher,
    dedup,
    idempotency: deps.idempotency,
    answers: { confirms: deps.confirms, log, proveAnswer: deps.proveAnswer },
    emit,
    listens,
    log,
    postponeDelayMs,
    inPlaceRetries,
  });
  const { jobControl, idempotency } = deps;
  const context = { publishJob: deps.publishJob, log, breaker: deps.breaker, emit, listens };
  return new JobProcessor({
    triage: { jobs: deps.jobs, maxBodyBytes: options.maxBodyBytes },
    redeliveryLimit: options.redeliveryLimit,
    inPlaceRetries,
    republisher,
    settler,
    jobControl:
      jobControl && new JobControlGuard({ jobControl, republisher, dedup, emit, log, postponeDelayMs }),
    limiterFor: deps.limiterFor,
    permits: new PermitGuard({ republisher, emit }),
    claims:
      idempotency &&
      new ClaimGuard({
        idempotency,
        republisher,
        emit,
        log,
        postponeDelayMs,
        delayUnitMs: deps.plan.delay.unitMs,
      }),
    context,
    emit,
    listens,
    instrumentation: deps.instrumentation,
    isolates: deps.isolates,
    batches: batchCollectors(deps.jobs, context),
  });
}
