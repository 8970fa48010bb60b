import { randomUUID } from 'node:crypto';
import {
  ConfigurationError,
  MAX_DELAY_MS,
  PublishError,
  validationMessage,
  type PublishedJob,
  type PublishOptions,
  type WarrenErrorContext,
} from '../core';
import type { OutgoingMessage } from '../connection';
import { encodeBody, HEADERS, jobProperties, laneOf, resolveJobKey } from '../message';
import { delayRoute, type PlannedJob, type TopologyPlan } from '../topology';
import type { ResolvedPublisherOptions } from './options';

/** A job ready to send: the message for the confirm channel and what the caller gets back. */
export interface Prepared {
  readonly message: OutgoingMessage;
  readonly published: PublishedJob;
  /** As the schema output it. */
  readonly payload: unknown;
  readonly delayMs: number;
  readonly correlationId: string | undefined;
}

/**
 * How one publish is built, before anything reaches the broker (no I/O). Precedence: the call's options over
 * the job's definition (priority) over the publisher's options (timeoutMs). A job due later (`delayMs`, or
 * `runAt` minus `now`) is routed through the delay levels with `warren-delayed` set, and carries its due
 * time in `warren-deliver-at` when it is longer than one pass through the levels; `deduplicate` sets
 * `warren-dedup`. The body is encoded here, and one over `maxBodyBytes` is refused with PUBLISH_TOO_LARGE.
 * `jobId` defaults to a new UUID (from `newJobId`: the publisher's JobIds).
 */
export function buildPublish(
  delay: TopologyPlan['delay'],
  limits: Pick<ResolvedPublisherOptions, 'maxBodyBytes' | 'timeoutMs'>,
  job: PlannedJob,
  payload: unknown,
  options: PublishOptions,
  now: number,
  batchIndex?: number,
  newJobId: () => string = randomUUID,
): Prepared {
  const name = job.name;
  const jobId = options.jobId ?? newJobId();
  const delayMs = publishDelayMs(name, options, now);
  const delayed = delayMs > 0;
  const context = { jobName: name, jobId, queue: job.queue };
  // a job without a key costs one comparison here: the key path is off the plain publish's way
  const key =
    options.key === undefined && job.key === undefined
      ? undefined
      : resolveJobKey(
          options.key,
          job.key,
          payload,
          batchIndex === undefined ? context : { ...context, batchIndex },
        );
  if (key === undefined && job.partitioned)
    throw missingKey(job, batchIndex === undefined ? context : { ...context, batchIndex });
  const route = routeOf(job, key, delay, delayed ? delayMs : 0);
  let properties = publishProperties(job, jobId, options, delayed ? delayMs : 0, delay.maxDelayMs, now);
  if (key !== undefined)
    properties = { ...properties, headers: { ...properties.headers, [HEADERS.key]: key } };
  // Errors before sending also name the job's place in a batch (a literal: a spread of `context`
  // took a third of this function's time, profiled).
  const checked = batchIndex === undefined ? context : { jobName: name, jobId, queue: job.queue, batchIndex };
  const content = encodeBody(payload, checked);
  if (content.length > limits.maxBodyBytes)
    throw new PublishError(
      'PUBLISH_TOO_LARGE',
      `the job's body is ${content.length} bytes, over publisher.maxBodyBytes (${limits.maxBodyBytes})`,
      checked,
    );
  return {
    message: {
      exchange: route.exchange,
      routingKey: route.routingKey,
      content,
      properties,
      deadline: now + (options.timeoutMs ?? limits.timeoutMs),
      context,
    },
    published: { jobId, name, queue: job.queue },
    payload,
    delayMs: delayed ? delayMs : 0,
    correlationId: options.correlationId,
  };
}

/**
 * Where a publish goes: a keyed job of a queue with fairness to its key's lane, anything else to its route
 * (the queue itself is the default lane); a delayed one through the delay levels to that queue.
 */
function routeOf(
  job: PlannedJob,
  key: string | undefined,
  delay: TopologyPlan['delay'],
  delayMs: number,
): { readonly exchange: string; readonly routingKey: string } {
  const lane =
    key !== undefined && job.lanes !== undefined ? job.lanes[laneOf(key, job.lanes.length)] : undefined;
  if (delayMs > 0) return delayRoute(delay, delayMs, lane ?? job.queueName);
  return lane === undefined ? job.route : { exchange: '', routingKey: lane };
}

/** A job of a queue with ordered partitions needs a key: without one it has no order to keep. */
function missingKey(job: PlannedJob, context: WarrenErrorContext): PublishError {
  return new PublishError(
    'PUBLISH_MISSING_KEY',
    `job '${job.name}' runs on queue '${job.queue}', which has ordered partitions: publish it with a key (a \`key\` function on the job or \`key\` in the publish options)`,
    context,
  );
}

/** jobProperties does not read the body: one empty buffer for all, not one a publish. */
const NO_BODY = Buffer.alloc(0);

/** In how many ms the job is due: `runAt` (absolute) or `delayMs`, at most MAX_DELAY_MS; 0 or less is now. */
export function publishDelayMs(name: string, options: PublishOptions, now: number): number {
  const delayMs = options.runAt !== undefined ? options.runAt.getTime() - now : (options.delayMs ?? 0);
  if (delayMs > MAX_DELAY_MS)
    throw new ConfigurationError(
      validationMessage(`publish('${name}') delay`, `must be at most ${MAX_DELAY_MS} ms (366 days)`, delayMs),
    );
  return delayMs;
}

/**
 * The AMQP properties of a job (the wire format, message/envelope.ts): the call's priority over the
 * job's, `warren-max-attempts` only when the call sets `attempts`, and the headers of a delayed
 * (`delayMs` > 0) or deduplicated publish.
 */
export function publishProperties(
  job: PlannedJob,
  jobId: string,
  options: PublishOptions,
  delayMs: number,
  maxLevelDelayMs: number,
  now: number,
) {
  const delayed = delayMs > 0;
  let properties = jobProperties({
    name: job.name,
    jobId,
    body: NO_BODY,
    attempt: 1,
    enqueuedAt: now,
    // On a queue with priorities a job without one is sent as 0, as docs/guide/priorities.md promises: RabbitMQ 4.3's
    // quorum queues count a message without a priority as 4 (measured), classic queues as 0.
    priority: options.priority ?? job.priority ?? (job.queueMaxPriority !== undefined ? 0 : undefined),
    correlationId: options.correlationId,
    headers: options.headers,
    deliverAt: delayed && delayMs > maxLevelDelayMs ? now + delayMs : undefined,
    maxAttempts: options.attempts,
  });
  if (options.deduplicate)
    properties = { ...properties, headers: { ...properties.headers, [HEADERS.dedup]: 1 } };
  if (delayed)
    properties = { ...properties, headers: { ...properties.headers, [HEADERS.delayed]: now + delayMs } };
  return properties;
}
