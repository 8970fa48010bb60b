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
import {
  resolveMetricsOptions,
  type MetricsOptions,
  type MetricsRegistry,
  type ResolvedMetricsOptions,
} from './options';
import { createMetricSet, type MetricSet } from './metric-set';
import { KeyLimitGauges } from './key-limit-gauges';
import { QueueDepths } from './queue-depths';
import type { SeriesCell } from './series-metric';

const BREAKER_STATES = ['closed', 'halfOpen', 'open'] as const;

/** The cells of one job and queue, bound once so the hot path does no label lookup. */
interface Series {
  readonly published: SeriesCell;
  readonly publishFailures: SeriesCell;
  readonly publishedBytes: SeriesCell;
  readonly confirm: SeriesCell;
  readonly started: SeriesCell;
  readonly completed: SeriesCell;
  readonly failed: SeriesCell;
  readonly retried: SeriesCell;
  readonly duplicates: SeriesCell;
  readonly wait: SeriesCell;
  readonly inFlight: SeriesCell;
  readonly duration: Readonly<Record<ProcessOutcome['kind'], SeriesCell>>;
}

/**
 * Prometheus metrics of one warren instance (docs/reference/metrics-and-traces.md): counters and histograms in base units,
 * labelled by job and queue. Job names the topology does not know share one label value, so a foreign or
 * hostile message cannot grow the label set.
 *
 * @example
 * const metrics = warrenMetrics();
 * const warren = await createWarren({ topology, handlers, instrumentation: [metrics] });
 * http.createServer((req, res) => req.url === '/metrics' ? metrics.handler(req, res) : res.end()).listen(9464);
 */
export function warrenMetrics<R extends MetricsRegistry = MetricsRegistry>(
  options: MetricsOptions<R> = {},
): WarrenMetrics<R> {
  return new WarrenMetrics<R>(resolveMetricsOptions(options));
}

export class WarrenMetrics<R extends MetricsRegistry = MetricsRegistry> implements Instrumentation {
  /** The registry the metrics are on (the one passed in, or this instance's own). */
  readonly registry: R;
  private readonly known = new Set<string>();
  private readonly bound = new Map<string, Series>();
  private readonly laneCells = new Map<string, SeriesCell>();
  private readonly other: string;
  private readonly m: MetricSet;

  /** Made by {@link warrenMetrics}; not meant to be called directly. */
  constructor(options: ResolvedMetricsOptions) {
    const prom = loadPeer<typeof Prom>('prom-client', 'warrenMetrics()');
    // A prom-client Registry behind the structural type (MetricsRegistry): it registers prom-client's own gauges.
    const registry = (options.registry as Prom.Registry | undefined) ?? new prom.Registry();
    this.registry = registry as unknown as R;
    this.other = options.otherJobLabel;
    this.m = createMetricSet(registry, options);
    new QueueDepths(prom, registry, options.prefix, options.queueDepthCacheMs, () => this.target);
    new KeyLimitGauges(prom, registry, options.prefix, () => this.target);
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

  /** Instrumentation hook: createWarren calls it once with the events and state to follow. */
  attach(target: InstrumentationTarget): void {
    this.target = target;
    for (const name of target.jobNames) this.known.add(name);
    const m = this.m;
    const connection = m.connection.cell();
    const leader = m.leader.cell();
    connection.set(target.isConnected() ? 1 : 0);
    leader.set(target.isLeader() ? 1 : 0);
    target.on('connected', () => connection.set(1));
    target.on('disconnected', () => connection.set(0));
    target.on('leadershipChanged', ({ isLeader }) => leader.set(isLeader ? 1 : 0));
    target.on('breakerStateChanged', ({ breaker, state }) => {
      for (const s of BREAKER_STATES) m.breaker.cell(breaker, s).set(s === state ? 1 : 0);
    });
    target.on('failed', (e) => this.series(e).failed.inc());
    target.on('retried', (e) => this.series(e).retried.inc());
    target.on('duplicate', (e) => this.series(e).duplicates.inc());
    target.on('discarded', (e) => m.discarded.cell(this.job(e.name), e.queue, e.cause).inc());
    target.on('postponed', (e) => m.postponed.cell(this.job(e.name), e.queue, 'breaker').inc());
    target.on('rateLimited', (e) => m.postponed.cell(this.job(e.name), e.queue, 'rate-limit').inc());
    target.on('deadLettered', (e) => m.deadLettered.cell(this.job(e.name), e.queue, e.reason).inc());
    target.on('batchSettled', (e) => {
      m.batchSize.cell(this.job(e.name), e.queue).observe(e.size);
      m.batchDuration.cell(this.job(e.name), e.queue).observe(e.durationMs / 1000);
    });
  }

  /** Instrumentation hook: the publisher calls it around each publish. */
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

  /** Instrumentation hook: the worker calls it around each handler run. */
  process = (info: ProcessInfo): ProcessScope => {
    const series = this.series(info);
    series.started.inc();
    if (info.attempt === 1) {
      const waited = Math.max(0, Date.now() - info.enqueuedAt) / 1000;
      series.wait.observe(waited);
      if (info.lane !== undefined) this.laneWait(info.queue, info.lane).observe(waited);
    }
    series.inFlight.inc();
    const started = performance.now();
    return {
      run: (fn) => fn(),
      carry: () => undefined,
      end: (outcome) => {
        // Counted here, not from the `completed` event: listening to it would make the worker build
        // that event's payload for every job.
        if (outcome.kind === 'completed') series.completed.inc();
        series.inFlight.dec();
        series.duration[outcome.kind].observe((performance.now() - started) / 1000);
      },
    };
  };

  /** The lane-wait cell of one lane of a queue with fairness (bounded: at most 2 * 64 + 1 lanes a queue). */
  private laneWait(queue: string, lane: string): SeriesCell {
    const key = `${queue}\u0000${lane}`;
    let cell = this.laneCells.get(key);
    if (cell === undefined) {
      cell = this.m.laneWait.cell(queue, lane);
      this.laneCells.set(key, cell);
    }
    return cell;
  }

  /** The cells of one job and queue (series-metric.ts says why not prom-client's own metrics). */
  private series(e: { readonly name: string; readonly queue: string }): Series {
    const job = this.job(e.name);
    const key = `${job}\u0000${e.queue}`;
    let series = this.bound.get(key);
    if (series === undefined) {
      const m = this.m;
      const q = e.queue;
      series = {
        published: m.published.cell(job, q),
        publishFailures: m.publishFailures.cell(job, q),
        publishedBytes: m.publishedBytes.cell(job, q),
        confirm: m.confirm.cell(job, q),
        started: m.started.cell(job, q),
        completed: m.completed.cell(job, q),
        failed: m.failed.cell(job, q),
        retried: m.retried.cell(job, q),
        duplicates: m.duplicates.cell(job, q),
        wait: m.wait.cell(job, q),
        inFlight: m.inFlight.cell(job, q),
        duration: {
          completed: m.duration.cell(job, q, 'completed'),
          failed: m.duration.cell(job, q, 'failed'),
          aborted: m.duration.cell(job, q, 'aborted'),
        },
      };
      this.bound.set(key, series);
    }
    return series;
  }

  /** The job label: a name the topology does not know (foreign, hostile) shares one value. */
  private job(name: string | undefined): string {
    return name !== undefined && this.known.has(name) ? name : this.other;
  }
}
