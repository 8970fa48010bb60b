import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as Prom from 'prom-client';
import type {
  Instrumentation,
  InstrumentationTarget,
  ProcessInfo,
  ProcessOutcome,
  ProcessScope,
  PublishInfo,
} from '../core';
import { loadPeer } from './load-peer';
import { resolveMetricsOptions, type MetricsOptions, type ResolvedMetricsOptions } from './options';
import { QueueDepths } from './queue-depths';

type Labels = 'job' | 'queue';
type Observer = { observe(value: number): void };
interface Series {
  readonly published: { inc(value?: number): void };
  readonly publishFailures: { inc(value?: number): void };
  readonly publishedBytes: { inc(value?: number): void };
  readonly confirm: Observer;
  readonly started: { inc(value?: number): void };
  readonly completed: { inc(value?: number): void };
  readonly failed: { inc(value?: number): void };
  readonly retried: { inc(value?: number): void };
  readonly duplicates: { inc(value?: number): void };
  readonly wait: Observer;
  readonly inFlight: { inc(value?: number): void; dec(value?: number): void };
  readonly duration: Readonly<Record<ProcessOutcome['kind'], Observer>>;
}
const BREAKER_STATES = ['closed', 'halfOpen', 'open'] as const;

/**
 * Prometheus metrics of one warren instance (README, "Metrics"): counters and histograms in base units,
 * labelled by job and queue. Job names the topology does not know share one label value, so a foreign or
 * hostile message cannot grow the label set.
 *
 * @example
 * const metrics = warrenMetrics();
 * const warren = await createWarren({ topology, handlers, instrumentation: [metrics] });
 * http.createServer((req, res) => req.url === '/metrics' ? metrics.handler(req, res) : res.end()).listen(9464);
 */
export function warrenMetrics(options: MetricsOptions = {}): WarrenMetrics {
  return new WarrenMetrics(resolveMetricsOptions(options));
}

export class WarrenMetrics implements Instrumentation {
  /** The registry the metrics are on (the one passed in, or this instance's own). */
  readonly registry: Prom.Registry;
  private readonly known = new Set<string>();
  private readonly bound = new Map<string, Series>();
  private readonly other: string;
  private readonly m;

  /** @internal use warrenMetrics() */
  constructor(options: ResolvedMetricsOptions) {
    const prom = loadPeer<typeof Prom>('prom-client', 'warrenMetrics()');
    this.registry = options.registry ?? new prom.Registry();
    this.other = options.otherJobLabel;
    const p = options.prefix;
    const registers = [this.registry];
    const counter = (name: string, help: string, labelNames: readonly string[] = ['job', 'queue']) =>
      new prom.Counter({ name: p + name, help, labelNames, registers });
    const histogram = (name: string, help: string, buckets: readonly number[], labelNames: string[]) =>
      new prom.Histogram({ name: p + name, help, labelNames, buckets: [...buckets], registers });
    const gauge = (name: string, help: string, labelNames: readonly string[] = []) =>
      new prom.Gauge({ name: p + name, help, labelNames, registers });
    this.m = {
      published: counter('jobs_published_total', 'Jobs the broker confirmed.'),
      publishFailures: counter(
        'publish_failures_total',
        'Publishes that failed (nacked, returned, timed out).',
      ),
      publishedBytes: counter('published_bytes_total', 'Body bytes of confirmed jobs.'),
      confirm: histogram(
        'publish_confirm_duration_seconds',
        'From send to the broker confirm (or failure).',
        options.durationBuckets,
        ['job', 'queue'],
      ),
      started: counter('jobs_started_total', 'Handler runs started (each attempt).'),
      completed: counter('jobs_completed_total', 'Handler runs that completed; the job is acked.'),
      failed: counter('jobs_failed_total', 'Attempts that failed (error, timeout), retried or not.'),
      retried: counter('jobs_retried_total', 'Failed attempts republished for a later attempt.'),
      deadLettered: counter('jobs_dead_lettered_total', 'Jobs moved to dead letters, by reason.', [
        'job',
        'queue',
        'reason',
      ]),
      postponed: counter(
        'jobs_postponed_total',
        'Jobs re-delayed without spending an attempt, by cause (breaker, rate-limit).',
        ['job', 'queue', 'cause'],
      ),
      duplicates: counter('jobs_duplicate_total', 'Deliveries of an already completed job id, acked unrun.'),
      duration: histogram(
        'job_duration_seconds',
        'Handler run time, by outcome (completed, failed, aborted).',
        options.durationBuckets,
        ['job', 'queue', 'outcome'],
      ),
      wait: histogram(
        'job_wait_seconds',
        "From the first publish to the start of the job's first attempt.",
        options.waitBuckets,
        ['job', 'queue'],
      ),
      inFlight: gauge('jobs_in_flight', 'Handler runs in progress.', ['job', 'queue']),
      connection: gauge('connection_up', '1 while connected to the broker, else 0.'),
      breaker: gauge('breaker_state', '1 for the current state of each circuit breaker.', [
        'breaker',
        'state',
      ]),
      leader: gauge('cron_leader', '1 while this process is the cron leader, else 0.'),
    };
    new QueueDepths(prom, this.registry, p, options.queueDepthCacheMs, () => this.target);
    this.handler = this.handler.bind(this);
  }

  private target: InstrumentationTarget | undefined;

  /** The Prometheus text of the registry. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** A plain `/metrics` handler for Node http and Express: `app.get('/metrics', metrics.handler)`. */
  handler(_request: IncomingMessage, response: ServerResponse): void {
    this.registry.metrics().then(
      (text) => {
        response.setHeader('Content-Type', this.registry.contentType);
        response.end(text);
      },
      (error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      },
    );
  }

  /** @internal called by createWarren */
  attach(target: InstrumentationTarget): void {
    this.target = target;
    for (const name of target.jobNames) this.known.add(name);
    const m = this.m;
    m.connection.set(target.isConnected() ? 1 : 0);
    m.leader.set(target.isLeader() ? 1 : 0);
    target.on('connected', () => m.connection.set(1));
    target.on('disconnected', () => m.connection.set(0));
    target.on('leadershipChanged', ({ isLeader }) => m.leader.set(isLeader ? 1 : 0));
    target.on('breakerStateChanged', ({ breaker, state }) => {
      for (const s of BREAKER_STATES) m.breaker.set({ breaker, state: s }, s === state ? 1 : 0);
    });
    target.on('completed', (e) => this.series(e).completed.inc());
    target.on('failed', (e) => this.series(e).failed.inc());
    target.on('retried', (e) => this.series(e).retried.inc());
    target.on('duplicate', (e) => this.series(e).duplicates.inc());
    target.on('postponed', (e) => m.postponed.inc({ ...this.labels(e), cause: 'breaker' }));
    target.on('rateLimited', (e) => m.postponed.inc({ ...this.labels(e), cause: 'rate-limit' }));
    target.on('deadLettered', (e) => m.deadLettered.inc({ ...this.labels(e), reason: e.reason }));
  }

  /** @internal the publisher's hook */
  publish = (info: PublishInfo): ((error: unknown) => void) => {
    const series = this.series(info);
    const started = performance.now();
    return (error) => {
      series.confirm.observe((performance.now() - started) / 1000);
      if (error === undefined) {
        series.published.inc();
        series.publishedBytes.inc(info.bytes);
      } else series.publishFailures.inc();
    };
  };

  /** @internal the worker's hook */
  process = (info: ProcessInfo): ProcessScope => {
    const series = this.series(info);
    series.started.inc();
    if (info.attempt === 1) series.wait.observe(Math.max(0, Date.now() - info.enqueuedAt) / 1000);
    series.inFlight.inc();
    const started = performance.now();
    return {
      run: (fn) => fn(),
      carry: () => undefined,
      end: (outcome) => {
        series.inFlight.dec();
        series.duration[outcome.kind].observe((performance.now() - started) / 1000);
      },
    };
  };

  /**
   * The children of one job and queue, bound once: prom-client hashes a label set on every call
   * otherwise, which was most of the per-job cost.
   */
  private series(e: { readonly name: string; readonly queue: string }): Series {
    const labels = this.labels(e);
    const key = `${labels.job}\u0000${labels.queue}`;
    let series = this.bound.get(key);
    if (series === undefined) {
      const m = this.m;
      const outcome = (o: string) => m.duration.labels({ ...labels, outcome: o });
      series = {
        published: m.published.labels(labels),
        publishFailures: m.publishFailures.labels(labels),
        publishedBytes: m.publishedBytes.labels(labels),
        confirm: m.confirm.labels(labels),
        started: m.started.labels(labels),
        completed: m.completed.labels(labels),
        failed: m.failed.labels(labels),
        retried: m.retried.labels(labels),
        duplicates: m.duplicates.labels(labels),
        wait: m.wait.labels(labels),
        inFlight: m.inFlight.labels(labels),
        duration: { completed: outcome('completed'), failed: outcome('failed'), aborted: outcome('aborted') },
      };
      this.bound.set(key, series);
    }
    return series;
  }

  private labels(e: { readonly name: string | undefined; readonly queue: string }): Record<Labels, string> {
    return { job: e.name !== undefined && this.known.has(e.name) ? e.name : this.other, queue: e.queue };
  }
}
