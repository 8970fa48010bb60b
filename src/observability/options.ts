import { ConfigurationError, validationMessage } from '../core';

/**
 * What warren uses of a prom-client `Registry`, spelled here so that warren's published types do not
 * name prom-client, an optional peer: an app that traces without prom-client installed still
 * type-checks with `skipLibCheck` off. A prom-client `Registry` is one.
 */
export interface MetricsRegistry {
  registerMetric(metric: unknown): void;
  metrics(): Promise<string>;
  readonly contentType: string;
}

/**
 * What warren uses of an OpenTelemetry `TracerProvider` (the same reason: `@opentelemetry/api` is an
 * optional peer). Any `TracerProvider` is one.
 */
export interface TracerSource {
  getTracer(name: string, version?: string): unknown;
}

export interface MetricsOptions<R extends MetricsRegistry = MetricsRegistry> {
  /**
   * The prom-client registry to register on. Default: a new registry of this instance (`metrics.registry`,
   * typed as the one given, else as MetricsRegistry: cast it to prom-client's `Registry` for the rest).
   */
  readonly registry?: R;
  /** Prefix of every metric name. Default 'warren_'. */
  readonly prefix?: string;
  /** Histogram buckets of handler duration and confirm latency, in seconds. */
  readonly durationBuckets?: readonly number[];
  /** Histogram buckets of the wait from enqueue to start, in seconds (waits are longer than runs). */
  readonly waitBuckets?: readonly number[];
  /**
   * How long queue depths read at scrape time are reused, in ms: every scrape within this window answers
   * from the last passive declares instead of asking the broker again. Default 5000.
   */
  readonly queueDepthCacheMs?: number;
  /** Label value of a job name this process's topology does not know (foreign or hostile). Default 'other'. */
  readonly otherJobLabel?: string;
}

export const METRICS_DEFAULTS = Object.freeze({
  prefix: 'warren_',
  durationBuckets: Object.freeze([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]),
  waitBuckets: Object.freeze([0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600]),
  queueDepthCacheMs: 5000,
  otherJobLabel: 'other',
});

export type ResolvedMetricsOptions = Readonly<Omit<Required<MetricsOptions>, 'registry'>> & {
  readonly registry: MetricsRegistry | undefined;
};

export function resolveMetricsOptions(input: MetricsOptions = {}): ResolvedMetricsOptions {
  const resolved = {
    registry: input.registry,
    prefix: input.prefix ?? METRICS_DEFAULTS.prefix,
    durationBuckets: input.durationBuckets ?? METRICS_DEFAULTS.durationBuckets,
    waitBuckets: input.waitBuckets ?? METRICS_DEFAULTS.waitBuckets,
    queueDepthCacheMs: input.queueDepthCacheMs ?? METRICS_DEFAULTS.queueDepthCacheMs,
    otherJobLabel: input.otherJobLabel ?? METRICS_DEFAULTS.otherJobLabel,
  };
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(resolved.prefix))
    throw new ConfigurationError(
      validationMessage('metrics.prefix', 'must be a valid Prometheus name prefix', resolved.prefix),
    );
  if (!Number.isInteger(resolved.queueDepthCacheMs) || resolved.queueDepthCacheMs < 0)
    throw new ConfigurationError(
      validationMessage('metrics.queueDepthCacheMs', 'must be an integer >= 0', resolved.queueDepthCacheMs),
    );
  for (const key of ['durationBuckets', 'waitBuckets'] as const) {
    const buckets = resolved[key];
    if (!Array.isArray(buckets) || buckets.length === 0 || buckets.some((b) => !(b > 0)))
      throw new ConfigurationError(
        validationMessage(`metrics.${key}`, 'must be a non-empty array of numbers > 0', buckets),
      );
  }
  return Object.freeze(resolved);
}

export interface TracingOptions {
  /** Where spans go. Default: the globally registered tracer provider (`trace.setGlobalTracerProvider`). */
  readonly tracerProvider?: TracerSource;
  /**
   * What a retry, a delayed job's run and a dead-letter replay become. `'link'` (default): a new trace
   * whose span links to the span before it (the previous attempt, or the delayed publish), so a trace
   * stays as long as one attempt. `'keep'`: the run continues the previous span's trace as its child,
   * one trace from the first publish to the last attempt however many hours apart.
   */
  readonly traces?: 'link' | 'keep';
}

export const TRACING_DEFAULTS = Object.freeze({ traces: 'link' as const });

export function resolveTracingOptions(
  input: TracingOptions = {},
): Readonly<TracingOptions & { traces: 'link' | 'keep' }> {
  const traces = input.traces ?? TRACING_DEFAULTS.traces;
  if (traces !== 'link' && traces !== 'keep')
    throw new ConfigurationError(validationMessage('tracing.traces', "must be 'link' or 'keep'", traces));
  return Object.freeze({ ...input, traces });
}
