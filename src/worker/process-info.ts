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
    ...(queue.lane !== undefined || queue.fairness !== undefined ? { lane: laneLabel(queue) } : {}),
  };
}

/** The lane label of a queue with fairness or one of its lanes: bounded by the lane count. */
export function laneLabel(queue: JobDelivery['queue']): string {
  const lane = queue.lane;
  if (lane === undefined) return 'intake';
  return lane.draining ? `previous-${lane.index}` : String(lane.index);
}
