import {
  ConfigurationError,
  PayloadValidationError,
  PublishError,
  UnknownJobError,
  validatePayload,
  WarrenError,
  type Instrumentation,
  type PublishOrigin,
  type PublishedJob,
  type PublishOptions,
} from '../core';
import type { ConfirmPublisher, OutgoingMessage } from '../connection';
import type { TopologyPlan } from '../topology';
import { JobIds } from './job-ids';
import type { ResolvedPublisherOptions } from './options';
import { checkBatchArray, checkBatchEntry, checkPublishOptions, optionsObject } from './publish-checks';
import { publishDebounced, type Debouncer } from './debounced-publish';
import { buildPublish, type Prepared } from './publish-message';
import type { ResultChannel, ResultHandle } from './result-channel';

/** One job of a `publishMany` call: `job` names it (as is, or through the call's `nameOf`). */
export interface BatchJob<J = string> {
  readonly job: J;
  readonly data: unknown;
  readonly options?: PublishOptions | undefined;
}

/** The outcome of one job of a `publishMany` call. */
export type BatchResult =
  | { readonly status: 'confirmed'; readonly job: PublishedJob }
  | { readonly status: 'failed'; readonly job: PublishedJob; readonly error: WarrenError };

/** A job `JobPublisher.validate` accepted: its id, queue and payload as the schema output it. */
export interface ValidatedJob extends PublishedJob {
  readonly payload: unknown;
}

type Reserved = { readonly status: 'reserved' } | { readonly status: 'exists'; readonly job: PublishedJob };

/** What the publisher needs of a deduplication store (`createWarren({ deduplication })`). */
export interface DedupReserver {
  reserve(job: PublishedJob, ttlMs: number, token: string): Promise<Reserved>;
  release(jobId: string, token: string): Promise<void>;
}

/** A batch job without options: read only, never written to, so one for all. */
const NO_OPTIONS: PublishOptions = Object.freeze({});

/** How long a deduplicated job id stays reserved past its delay when nothing releases it. */
const DEDUP_TTL_MS = 24 * 3_600_000;

/**
 * Publishes jobs per the wire format: validates the options and the payload (Standard Schema)
 * before anything reaches the broker, routes plain jobs through their exchange (or straight to their
 * queue) and delayed ones through the delay levels, and resolves on the broker's confirm.
 */
export class JobPublisher {
  private readonly ids = new JobIds();

  constructor(
    private readonly plan: TopologyPlan,
    private readonly confirms: ConfirmPublisher,
    private readonly options: ResolvedPublisherOptions,
    private readonly instrumentation?: Instrumentation,
    private readonly results?: ResultChannel,
    private readonly dedup?: DedupReserver,
    /** Stores the copy of a `controllable` delayed job (docs/guide/job-control.md). */
    private readonly storeCopy?: (message: OutgoingMessage, queueName: string) => Promise<void>,
    /** Records debounced publishes (`debounce`) on the job-control stream. */
    private readonly debouncer?: Debouncer,
  ) {}

  /** Publishes on the result channel, with `reply_to` set to direct reply-to (docs/guide/results.md). */
  async publishWithResult(name: string, data: unknown, given: PublishOptions = {}): Promise<ResultHandle> {
    const options = optionsObject('publishWithResult', name, given);
    if (options.deduplicate || options.controllable || options.debounce)
      throw new ConfigurationError(
        `publishWithResult('${name}'): deduplicate, controllable and debounce work with publish only`,
      );
    if (this.results === undefined) throw new ConfigurationError('publishWithResult needs a result channel');
    const { message, published } = await this.prepare(name, data, options, Date.now());
    return this.results.send(message, published);
  }

  /** Waiting result handles reject with RESULT_LOST. */
  close(): Promise<void> {
    return this.results?.close() ?? Promise.resolve();
  }

  /** `origin` tells an instrumentation who publishes: a cron firing starts its own trace. */
  async publish(
    name: string,
    data: unknown,
    given: PublishOptions = {},
    origin: PublishOrigin = 'user',
  ): Promise<PublishedJob> {
    const options = optionsObject('publish', name, given);
    const now = Date.now();
    if (options.debounce !== undefined) {
      const job = this.plan.jobs.get(name);
      if (job !== undefined) checkPublishOptions(job, options);
      return publishDebounced(
        this.debouncer,
        name,
        { ...options, debounce: options.debounce },
        (delayed) => this.prepare(name, data, delayed, Date.now()),
        (prepared) => this.sendPrepared(prepared, origin),
      );
    }
    const prepared = await this.prepare(name, data, options, now);
    if (options.controllable) await this.keepCopy(prepared);
    if (!options.deduplicate) {
      await this.sendPrepared(prepared, origin);
      return prepared.published;
    }
    const published = prepared.published;
    const dedup = this.dedup!;
    const ttlMs = typeof options.deduplicate === 'object' ? options.deduplicate.ttlMs : DEDUP_TTL_MS;
    const dueIn = options.runAt ? options.runAt.getTime() - now : (options.delayMs ?? 0);
    const token = String(now); // the job's `warren-enqueued-at`: the worker releases this reservation by it
    const reserved = await dedup.reserve(published, Math.max(0, dueIn) + ttlMs, token);
    if (reserved.status === 'exists') return { ...reserved.job, deduplicated: true };
    try {
      await this.sendPrepared(prepared, origin);
    } catch (error) {
      await dedup.release(published.jobId, token).catch(() => undefined);
      throw error;
    }
    return published;
  }

  /**
   * Everything `publish` checks before it sends (the job name, the options, the payload against the
   * job's schema), without sending: the outbox checks a job when it is written, not when it is relayed.
   * Returns the payload as the schema output it and the job id (the given one or a new one).
   */
  async validate(name: string, data: unknown, given: PublishOptions = {}): Promise<ValidatedJob> {
    const options = optionsObject('outbox.publish', name, given);
    // The relay sends the row later with `send`, which neither reserves an id nor stores a copy.
    if (options.deduplicate || options.controllable || options.debounce)
      throw new ConfigurationError(
        `outbox.publish('${name}'): deduplicate, controllable and debounce work with warren.publish only`,
      );
    const jobId = options.jobId ?? this.ids.newId();
    const ready = this.prepare(name, data, { ...options, jobId }, Date.now());
    const { published, payload } = ready instanceof Promise ? await ready : ready;
    return { ...published, payload };
  }

  /** Sends a job `validate` accepted, as it returned it, and resolves on the broker's confirm. */
  async send(
    name: string,
    payload: unknown,
    options: PublishOptions & { jobId: string },
  ): Promise<PublishedJob> {
    const job = this.plan.jobs.get(name);
    if (job === undefined) throw new UnknownJobError(name, { known: [...this.plan.jobs.keys()] });
    const prepared = buildPublish(
      this.plan.delay,
      this.options,
      job,
      payload,
      options,
      Date.now(),
      undefined,
      this.ids.newId,
    );
    await this.sendPrepared(prepared, 'user');
    return prepared.published;
  }

  /**
   * Validates every job first (the first invalid one rejects the call, naming its index in
   * `batchIndex`, and nothing is sent), then sends them all pipelined on the confirm channel and
   * resolves with one result per job, in input order.
   */
  async publishMany<J>(
    jobs: readonly BatchJob<J>[],
    nameOf: (job: J) => string = String,
  ): Promise<BatchResult[]> {
    checkBatchArray(jobs);
    const now = Date.now();
    const count = jobs.length;
    // Only what is needed until the confirms is kept: a batch's jobs all live that long.
    const messages = new Array<OutgoingMessage>(count);
    const published = new Array<PublishedJob>(count);
    // with an instrumentation, its hooks need each job's Prepared, once every job is valid
    const kept = this.instrumentation?.publish ? new Array<Prepared>(count) : undefined;
    for (let i = 0; i < count; i++) {
      const { job, data, options } = checkBatchEntry(jobs[i]!, i);
      const ready = this.prepare(nameOf(job), data, options ?? NO_OPTIONS, now, i);
      const prepared = ready instanceof Promise ? await ready : ready;
      messages[i] = prepared.message;
      published[i] = prepared.published;
      if (kept) kept[i] = prepared;
    }
    const ends = kept?.map((p) => this.instrument(p, 'user'));
    const outcomes = await this.confirms.sendMany(messages);
    if (ends) for (let i = 0; i < ends.length; i++) ends[i]?.(outcomes[i]);
    const results = new Array<BatchResult>(count);
    for (let i = 0; i < count; i++) {
      const job = published[i]!;
      const error = outcomes[i];
      results[i] =
        error === undefined
          ? { status: 'confirmed', job }
          : { status: 'failed', job, error: asWarrenError(error, job) };
    }
    return results;
  }

  /** Synchronous unless the job has a schema, so that a batch without schemas costs no promise a job. */
  private prepare(
    name: string,
    data: unknown,
    options: PublishOptions,
    now: number,
    batchIndex?: number,
  ): Prepared | Promise<Prepared> {
    const job = this.plan.jobs.get(name);
    if (job === undefined)
      throw new UnknownJobError(name, {
        known: [...this.plan.jobs.keys()],
        ...(batchIndex === undefined ? {} : { batchIndex }),
      });
    checkPublishOptions(job, options, batchIndex);
    if ((options.controllable || options.debounce) && batchIndex !== undefined)
      throw new ConfigurationError(
        `publishMany job [${batchIndex}] ('${name}'): ${options.controllable ? 'controllable' : 'debounce'} works with publish only`,
        {
          batchIndex,
        },
      );
    if (options.deduplicate && (this.dedup === undefined || batchIndex !== undefined))
      throw new ConfigurationError(
        batchIndex === undefined
          ? `publish('${name}'): deduplicate needs createWarren({ deduplication: store })`
          : `publishMany job [${batchIndex}] ('${name}'): deduplicate works with publish only`,
        batchIndex === undefined ? {} : { batchIndex },
      );
    const { delay } = this.plan;
    const newId = this.ids.newId;
    if (!job.schema) return buildPublish(delay, this.options, job, data, options, now, batchIndex, newId);
    return validatePayload(job.schema, data).then((result) => {
      if (result.issues)
        throw new PayloadValidationError(name, result.issues, batchIndex === undefined ? {} : { batchIndex });
      return buildPublish(delay, this.options, job, result.value, options, now, batchIndex, newId);
    });
  }

  private keepCopy(prepared: Prepared): Promise<void> {
    const { published, message } = prepared;
    if (this.storeCopy === undefined)
      throw new ConfigurationError(`publish('${published.name}'): controllable needs a job-control stream`);
    return this.storeCopy(message, this.plan.jobs.get(published.name)!.queueName);
  }

  private async sendPrepared(prepared: Prepared, origin: PublishOrigin): Promise<void> {
    const end = this.instrument(prepared, origin);
    const sent = this.confirms.send(prepared.message);
    if (end === undefined) return sent;
    return sent.then(
      () => end(undefined),
      (error: unknown) => {
        end(error);
        throw error;
      },
    );
  }

  /** The instrumentation's publish hook (it may add trace headers); undefined when there is none. */
  private instrument(prepared: Prepared, origin: PublishOrigin): ((error: unknown) => void) | undefined {
    const { message, published } = prepared;
    return this.instrumentation?.publish?.({
      name: published.name,
      jobId: published.jobId,
      queue: published.queue,
      exchange: message.exchange,
      routingKey: message.routingKey,
      correlationId: prepared.correlationId,
      bytes: message.content.length,
      delayMs: prepared.delayMs,
      origin,
      headers: message.properties.headers!,
    });
  }
}

/** The confirm publisher fails with WarrenErrors; anything else is wrapped, never passed on bare. */
function asWarrenError(error: Error, job: PublishedJob): WarrenError {
  if (error instanceof WarrenError) return error;
  return new PublishError('PUBLISH_TIMEOUT', `publish failed: ${error.message}`, {
    jobName: job.name,
    jobId: job.jobId,
    queue: job.queue,
    cause: error,
  });
}
