import { TopologyError, type JobDefinition } from '../core';
import type { ExchangeDeclaration, QueueDeclaration } from './define-topology';
import type { TopologyNaming } from './naming';
import { bindingsOf, defaultPattern } from './plan-checks';
import { planKeyLimits, type KeyLimitScopes } from './plan-key-limits';
import { DEFAULT_LANES } from './plan-lanes';
import { topicMatches } from './topic-match';
import type { PlannedJob } from './topology-plan';

/**
 * Job name → its planned job: the queue it is consumed from and the route a publish takes. A name defined
 * twice with different settings, an unknown queue or a priority the queue cannot hold is a TopologyError.
 */
export function planJobs(
  definitions: readonly JobDefinition[],
  queueDecls: Readonly<Record<string, QueueDeclaration>>,
  exchangeDecls: Readonly<Record<string, ExchangeDeclaration>>,
  naming: TopologyNaming,
): Map<string, PlannedJob> {
  const jobs = new Map<string, PlannedJob>();
  const seen = new Map<string, JobDefinition>();
  const scopes: KeyLimitScopes = new Map();
  const globalScopes = new Set(
    definitions.flatMap((d) =>
      d.limiter !== undefined && d.limiter.per === undefined ? [d.limiter.key ?? d.name] : [],
    ),
  );
  for (const job of definitions) {
    const earlier = seen.get(job.name);
    if (earlier !== undefined) {
      if (earlier === job || sameDefinition(earlier, job)) continue;
      throw new TopologyError(
        `job '${job.name}' is defined twice with different settings (queues '${earlier.queue}' and '${job.queue}')`,
        { jobName: job.name },
      );
    }
    seen.set(job.name, job);
    const queue = jobQueueOf(job, queueDecls);
    const queueName = naming.queue(job.queue);
    const partitions = partitionNames(job.queue, queue, naming);
    const lanes =
      partitions ?? (queue.fairness === undefined ? undefined : laneNames(job.queue, queue, naming));
    const keyLimits = planKeyLimits(job, queue, scopes, globalScopes);
    const per = job.limiter?.per;
    jobs.set(job.name, {
      ...job,
      // a per-limit value is the job's key: it picks the partition whose owner counts it
      ...(typeof per === 'function' ? { key: per } : {}),
      ...(keyLimits !== undefined ? { keyLimits } : {}),
      queueName,
      ...(lanes !== undefined ? { lanes } : {}),
      ...(partitions !== undefined ? { partitioned: true as const } : {}),
      ...(queue.maxPriority !== undefined ? { queueMaxPriority: queue.maxPriority } : {}),
      route: routeOf(job.name, queue, exchangeDecls, naming, queueName),
    });
  }
  return jobs;
}

/** The declaration of the job's queue, checked against the job's priority. */
function jobQueueOf(
  job: JobDefinition,
  queueDecls: Readonly<Record<string, QueueDeclaration>>,
): QueueDeclaration {
  const path = `job '${job.name}'`;
  const queue = queueDecls[job.queue];
  if (queue === undefined) {
    const known = Object.keys(queueDecls);
    throw new TopologyError(
      `${path} uses unknown queue '${job.queue}'${known.length ? ` (declared: ${known.join(', ')})` : ' (no queues are declared)'}`,
      { jobName: job.name, queue: job.queue },
    );
  }
  if (job.priority !== undefined) {
    if (queue.maxPriority === undefined)
      throw new TopologyError(
        `${path} has priority ${job.priority} but queue '${job.queue}' has no maxPriority`,
        { jobName: job.name },
      );
    if (!Number.isInteger(job.priority) || job.priority < 0 || job.priority > queue.maxPriority) {
      throw new TopologyError(
        `${path}: priority must be an integer from 0 to ${queue.maxPriority} (got ${job.priority})`,
        { jobName: job.name },
      );
    }
  }
  return queue;
}

/**
 * A job published by name travels through the first exchange that routes its name to its queue, else straight
 * to the queue.
 */
function routeOf(
  jobName: string,
  queue: QueueDeclaration,
  exchangeDecls: Readonly<Record<string, ExchangeDeclaration>>,
  naming: TopologyNaming,
  queueName: string,
): PlannedJob['route'] {
  for (const binding of bindingsOf(queue)) {
    const exchange = exchangeDecls[binding.exchange]!;
    const pattern = binding.pattern ?? defaultPattern(exchange);
    const routes =
      exchange.type === 'fanout' ||
      (exchange.type === 'direct' && pattern === jobName) ||
      (exchange.type === 'topic' && topicMatches(pattern, jobName));
    if (routes) return { exchange: naming.exchange(binding.exchange), routingKey: jobName };
  }
  return { exchange: '', routingKey: queueName };
}

/** The current lanes of a queue with fairness, by index (as planFairness names them). */
function laneNames(key: string, queue: QueueDeclaration, naming: TopologyNaming): readonly string[] {
  const fairness = queue.fairness === true ? {} : queue.fairness;
  const count = fairness?.lanes ?? DEFAULT_LANES;
  return Array.from({ length: count }, (_, i) => naming.lane(key, count, i));
}

/** The current partitions of a queue with ordered partitions, by index (as planPartitions names them). */
function partitionNames(
  key: string,
  queue: QueueDeclaration,
  naming: TopologyNaming,
): readonly string[] | undefined {
  const partitions = queue.partitions;
  if (partitions === undefined) return undefined;
  const count = typeof partitions === 'number' ? partitions : partitions.count;
  return Array.from({ length: count }, (_, i) => naming.partition(key, count, i));
}

function sameDefinition(a: JobDefinition, b: JobDefinition): boolean {
  return (
    a.queue === b.queue &&
    a.attempts === b.attempts &&
    a.timeoutMs === b.timeoutMs &&
    a.concurrency === b.concurrency &&
    a.priority === b.priority &&
    JSON.stringify(a.backoff) === JSON.stringify(b.backoff)
  );
}
