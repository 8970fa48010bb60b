import type * as Prom from 'prom-client';
import type { ResolvedMetricsOptions } from './options';
import { SeriesMetric } from './series-metric';

/** Every metric warren exports besides the scrape-time queue depths (docs/reference/metrics-and-traces.md). */
export type MetricSet = ReturnType<typeof createMetricSet>;

const JOB = ['job', 'queue'] as const;
/** Buckets of `batch_size`: jobs per batch. */
const BATCH_SIZES = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000] as const;

/** Makes and registers one metric, its name prefixed. */
type MakeMetric = (
  name: string,
  help: string,
  type: 'counter' | 'gauge' | 'histogram',
  labelNames: readonly string[],
  buckets?: readonly number[],
) => SeriesMetric;

export function createMetricSet(registry: Prom.Registry, options: ResolvedMetricsOptions) {
  const metric: MakeMetric = (name, help, type, labelNames, buckets) => {
    const made = new SeriesMetric(options.prefix + name, help, type, labelNames, buckets);
    // A metric object of prom-client's shape (name, help, type, get, reset): the registry formats it.
    registry.registerMetric(made as unknown as Prom.Metric);
    return made;
  };
  // Registered in this order, which is the order of the scrape.
  const publish = publishMetrics(metric, options);
  const jobs = jobMetrics(metric, options);
  return { ...publish, ...jobs, ...stateMetrics(metric) };
}

function counterOf(metric: MakeMetric) {
  return (name: string, help: string, labels: readonly string[] = JOB) =>
    metric(name, help, 'counter', labels);
}

function publishMetrics(metric: MakeMetric, options: ResolvedMetricsOptions) {
  const counter = counterOf(metric);
  return {
    published: counter('jobs_published_total', 'Jobs the broker confirmed.'),
    publishFailures: counter(
      'publish_failures_total',
      'Publishes that failed (nacked, returned, timed out).',
    ),
    publishedBytes: counter('published_bytes_total', 'Body bytes of confirmed jobs.'),
    confirm: metric(
      'publish_confirm_duration_seconds',
      'From send to the broker confirm (or failure).',
      'histogram',
      JOB,
      options.durationBuckets,
    ),
  };
}

function jobMetrics(metric: MakeMetric, options: ResolvedMetricsOptions) {
  const counter = counterOf(metric);
  return {
    started: counter('jobs_started_total', 'Handler runs started (each attempt).'),
    completed: counter('jobs_completed_total', 'Handler runs that completed; the job is acked.'),
    failed: counter('jobs_failed_total', 'Attempts that failed (error, timeout), retried or not.'),
    retried: counter('jobs_retried_total', 'Failed attempts republished for a later attempt.'),
    deadLettered: counter('jobs_dead_lettered_total', 'Jobs moved to dead letters, by reason.', [
      ...JOB,
      'reason',
    ]),
    postponed: counter(
      'jobs_postponed_total',
      'Jobs re-delayed without spending an attempt, by cause (breaker, rate-limit).',
      [...JOB, 'cause'],
    ),
    duplicates: counter('jobs_duplicate_total', 'Deliveries of an already completed job id, acked unrun.'),
    discarded: counter(
      'jobs_discarded_total',
      'Delayed jobs acked unrun when due, by cause (debounce: a debounced copy superseded by a later publish of its key, or cancelled; job-control: cancelled, promoted or moved).',
      [...JOB, 'cause'],
    ),
    duration: metric(
      'job_duration_seconds',
      'Handler run time until the job is settled, by outcome (completed, failed, aborted).',
      'histogram',
      [...JOB, 'outcome'],
      options.durationBuckets,
    ),
    wait: metric(
      'job_wait_seconds',
      "From the first publish to the start of the job's first attempt.",
      'histogram',
      JOB,
      options.waitBuckets,
    ),
    inFlight: metric('jobs_in_flight', 'Handler runs in progress.', 'gauge', JOB),
    laneWait: metric(
      'job_lane_wait_seconds',
      "Queues with fairness: from the first publish to the start of the job's first attempt, by lane (0 to 63, previous-<n>, intake).",
      'histogram',
      ['queue', 'lane'],
      options.waitBuckets,
    ),
    batchSize: metric(
      'batch_size',
      'Jobs per handleBatch call (@Job({ batch })).',
      'histogram',
      JOB,
      BATCH_SIZES,
    ),
    batchDuration: metric(
      'batch_duration_seconds',
      'handleBatch run time, the whole batch (each job is in job_duration_seconds too).',
      'histogram',
      JOB,
      options.durationBuckets,
    ),
  };
}

/** Gauges of the process's state: the connection, the breakers, cron leadership. */
function stateMetrics(metric: MakeMetric) {
  return {
    connection: metric('connection_up', '1 while connected to the broker, else 0.', 'gauge', []),
    breaker: metric('breaker_state', '1 for the current state of each circuit breaker, else 0.', 'gauge', [
      'breaker',
      'state',
    ]),
    leader: metric('cron_leader', '1 while this process is the cron leader, else 0.', 'gauge', []),
  };
}
