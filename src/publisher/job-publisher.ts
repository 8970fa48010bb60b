import { randomUUID } from 'node:crypto';
import {
  ConfigurationError,
  formatIssuePath,
  PayloadValidationError,
  UnknownJobError,
  validationMessage,
  type Instrumentation,
  type PublishOrigin,
  type PublishedJob,
  type PublishOptions,
} from '../core';
import type { ConfirmPublisher } from '../connection';
import { encodeBody, jobProperties } from '../message';
import { delayRoute, type PlannedJob, type TopologyPlan } from '../topology';
import type { ResolvedPublisherOptions } from './options';

const RESERVED_HEADER = /^(x-|warren-)/i;

/**
 * Publishes jobs per the wire format: validates the options and the payload (Standard Schema)
 * before anything reaches the broker, routes plain jobs through their exchange (or straight to their
 * queue) and delayed ones through the delay levels, and resolves on the broker's confirm.
 */
export class JobPublisher {
  constructor(
    private readonly plan: TopologyPlan,
    private readonly confirms: ConfirmPublisher,
    private readonly options: ResolvedPublisherOptions,
    private readonly instrumentation?: Instrumentation,
  ) {}

  /** `origin` tells an instrumentation who publishes: a cron firing starts its own trace. */
  async publish(
    name: string,
    data: unknown,
    options: PublishOptions = {},
    origin: PublishOrigin = 'user',
  ): Promise<PublishedJob> {
    const job = this.plan.jobs.get(name);
    if (job === undefined) throw new UnknownJobError(name, { known: [...this.plan.jobs.keys()] });
    const now = Date.now();
    const jobId = options.jobId ?? randomUUID();
    checkPublishOptions(job, options);
    let payload = data;
    if (job.schema) {
      const result = await job.schema['~standard'].validate(data);
      if (result.issues)
        throw new PayloadValidationError(
          name,
          result.issues.map((i) => ({
            message: i.message,
            ...(formatIssuePath(i) ? { path: formatIssuePath(i)! } : {}),
          })),
        );
      payload = result.value;
    }
    const delayMs = options.runAt !== undefined ? options.runAt.getTime() - now : (options.delayMs ?? 0);
    const delayed = delayMs > 0;
    const route = delayed ? delayRoute(this.plan.delay, delayMs, job.queueName) : job.route;
    const properties = jobProperties({
      name,
      jobId,
      body: Buffer.alloc(0),
      attempt: 1,
      enqueuedAt: now,
      priority: options.priority ?? job.priority,
      correlationId: options.correlationId,
      headers: options.headers,
      deliverAt: delayed && delayMs > this.plan.delay.maxDelayMs ? now + delayMs : undefined,
      maxAttempts: options.attempts,
    });
    const content = encodeBody(payload);
    const end = this.instrumentation?.publish?.({
      name,
      jobId,
      queue: job.queue,
      exchange: route.exchange,
      routingKey: route.routingKey,
      correlationId: options.correlationId,
      bytes: content.length,
      delayMs: delayed ? delayMs : 0,
      origin,
      headers: properties.headers!,
    });
    const sent = this.confirms.send({
      exchange: route.exchange,
      routingKey: route.routingKey,
      content,
      properties,
      deadline: now + (options.timeoutMs ?? this.options.timeoutMs),
      context: { jobName: name, jobId, queue: job.queue },
    });
    if (end === undefined) await sent;
    else
      await sent.then(
        () => end(undefined),
        (error: unknown) => {
          end(error);
          throw error;
        },
      );
    return { jobId, name, queue: job.queue };
  }
}

function checkPublishOptions(job: PlannedJob, options: PublishOptions): void {
  const at = `publish('${job.name}')`;
  if (
    options.jobId !== undefined &&
    (typeof options.jobId !== 'string' || options.jobId.length === 0 || options.jobId.length > 255)
  ) {
    throw new ConfigurationError(
      validationMessage(`${at} jobId`, 'must be a string of 1 to 255 characters', options.jobId),
    );
  }
  if (options.delayMs !== undefined && options.runAt !== undefined)
    throw new ConfigurationError(`${at}: give delayMs or runAt, not both`);
  if (
    options.delayMs !== undefined &&
    (typeof options.delayMs !== 'number' || !Number.isFinite(options.delayMs) || options.delayMs < 0)
  ) {
    throw new ConfigurationError(
      validationMessage(`${at} delayMs`, 'must be a finite number >= 0', options.delayMs),
    );
  }
  if (
    options.runAt !== undefined &&
    (!(options.runAt instanceof Date) || Number.isNaN(options.runAt.getTime()))
  ) {
    throw new ConfigurationError(validationMessage(`${at} runAt`, 'must be a valid Date', options.runAt));
  }
  if (options.attempts !== undefined && (!Number.isInteger(options.attempts) || options.attempts < 1)) {
    throw new ConfigurationError(
      validationMessage(`${at} attempts`, 'must be an integer >= 1', options.attempts),
    );
  }
  if (options.timeoutMs !== undefined && (!Number.isInteger(options.timeoutMs) || options.timeoutMs < 1)) {
    throw new ConfigurationError(
      validationMessage(`${at} timeoutMs`, 'must be an integer >= 1', options.timeoutMs),
    );
  }
  if (options.priority !== undefined) {
    const queue = job.queue;
    const max = job.queueMaxPriority;
    if (max === undefined)
      throw new ConfigurationError(
        `${at}: priority needs a queue with maxPriority, and queue '${queue}' has none`,
      );
    if (!Number.isInteger(options.priority) || options.priority < 0 || options.priority > max) {
      throw new ConfigurationError(
        validationMessage(`${at} priority`, `must be an integer from 0 to ${max}`, options.priority),
      );
    }
  }
  for (const key of Object.keys(options.headers ?? {})) {
    if (RESERVED_HEADER.test(key))
      throw new ConfigurationError(
        `${at}: header '${key}' is reserved (names starting with x- or warren- belong to the broker and to warren)`,
      );
  }
}
