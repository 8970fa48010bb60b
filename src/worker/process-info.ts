import type { ProcessInfo } from '../core';
import type { JobDelivery } from './delivery';

/** What an instrumentation's `process` hook sees of a delivery about to run. */
export function processInfo(delivery: JobDelivery): ProcessInfo {
  const { message, queue, job } = delivery;
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
