import type * as amqp from 'amqplib';
import type { ProcessInfo } from '../core';
import type { DecodedJob } from '../message';
import type { PlannedJobQueue } from '../topology';

/** What an instrumentation's `process` hook sees of a delivery about to run. */
export function processInfo(
  message: amqp.ConsumeMessage,
  queue: PlannedJobQueue,
  job: DecodedJob,
): ProcessInfo {
  return {
    name: job.name,
    jobId: job.jobId,
    queue: queue.key,
    queueName: queue.name,
    exchange: message.fields.exchange,
    routingKey: message.fields.routingKey,
    attempt: job.attempt,
    enqueuedAt: job.enqueuedAt,
    correlationId:
      typeof message.properties.correlationId === 'string' ? message.properties.correlationId : undefined,
    bytes: message.content.length,
    headers: job.headers,
  };
}
