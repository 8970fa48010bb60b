/**
 * warren/observability: Prometheus metrics (`warrenMetrics`), OpenTelemetry traces (`warrenTracing`), and
 * the instrumentation contract both are built on, for your own (`WarrenOptions.instrumentation`).
 */
export { warrenMetrics, WarrenMetrics } from './warren-metrics';
export { warrenTracing } from './warren-tracing';
export {
  METRICS_DEFAULTS,
  TRACING_DEFAULTS,
  type MetricsOptions,
  type MetricsRegistry,
  type TracingOptions,
  type TracerSource,
} from './options';
export type {
  Instrumentation,
  InstrumentationTarget,
  PublishInfo,
  PublishOrigin,
  ProcessInfo,
  ProcessScope,
  ProcessOutcome,
} from '../core';
