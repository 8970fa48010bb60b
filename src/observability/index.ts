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
