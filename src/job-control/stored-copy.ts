import type * as amqp from 'amqplib';
import type { OutgoingMessage } from '../connection';
import { JobControlError } from '../core';
import { HEADERS, JSON_CONTENT_TYPE, SENDER_ROUTING_HEADERS } from '../message';
import { routeAfter, type DelayPlan, type PlannedJob } from '../topology';
import type { ControlRecord } from './control-record';

/** Header names a stored copy never passes on: the broker's `x-` ones, and sender-selected distribution. */
const UNCOPIED_HEADERS: ReadonlySet<string> = new Set(SENDER_ROUTING_HEADERS);

export interface CopyOptions {
  /** The copy id (`warren-control-copy`) of the promote or reschedule publishing it. */
  readonly copy: string;
  /** 0 to run now; else through the delay levels. */
  readonly delayMs: number;
  readonly delay: DelayPlan;
  readonly timeoutMs: number;
}

/**
 * The message a promote or reschedule publishes from a stored copy, built as a republish is: into the
 * planned queue of the job its `type` names (never the queue the record names), with properties warren
 * builds (never a stored `CC`/`BCC`, `user_id`, `expiration` or `app_id`). A record is only data: without
 * a signing key anyone on the vhost may have written it. A copy naming no job of the plan, or another job
 * id than its own, is refused.
 */
export function storedCopyMessage(
  stored: ControlRecord,
  jobs: ReadonlyMap<string, PlannedJob>,
  options: CopyOptions,
): OutgoingMessage {
  const name = stored.p?.type;
  const job = typeof name === 'string' ? jobs.get(name) : undefined;
  if (job === undefined || stored.p?.messageId !== stored.j)
    throw new JobControlError(
      'JOB_NOT_CONTROLLABLE',
      `job ${stored.j}: its stored copy names no job of this topology (${JSON.stringify(name)?.slice(0, 80)})`,
      { jobId: stored.j },
    );
  const { delayMs, delay } = options;
  const now = Date.now();
  const route = routeAfter(delay, delayMs, job.queueName);
  const headers: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(stored.h ?? {}))
    if (!key.startsWith('x-') && !UNCOPIED_HEADERS.has(key)) headers[key] = value;
  headers[HEADERS.controlCopy] = options.copy;
  headers[HEADERS.delayed] = now + Math.max(0, delayMs);
  if (delayMs > delay.maxDelayMs) headers[HEADERS.deliverAt] = now + delayMs;
  else delete headers[HEADERS.deliverAt];
  return {
    exchange: route.exchange,
    routingKey: route.routingKey,
    content: Buffer.from(stored.b ?? '', 'base64'),
    properties: copyProperties(stored, job, headers),
    deadline: now + options.timeoutMs,
    context: { jobId: stored.j, jobName: job.name, queue: job.queue },
  };
}

/** The properties of a published copy: built here, only the job's own fields taken from the stored copy. */
function copyProperties(
  stored: ControlRecord,
  job: PlannedJob,
  headers: Record<string, unknown>,
): amqp.Options.Publish {
  const p = stored.p ?? {};
  const properties: amqp.Options.Publish = {
    headers,
    persistent: true,
    mandatory: true,
    contentType: JSON_CONTENT_TYPE,
    type: job.name,
    messageId: stored.j,
  };
  if (typeof p.timestamp === 'number' && Number.isSafeInteger(p.timestamp))
    properties.timestamp = p.timestamp;
  const max = job.queueMaxPriority;
  if (max !== undefined && typeof p.priority === 'number' && Number.isInteger(p.priority))
    properties.priority = Math.min(max, Math.max(0, p.priority));
  if (typeof p.correlationId === 'string' && p.correlationId.length <= 200)
    properties.correlationId = p.correlationId;
  return properties;
}
