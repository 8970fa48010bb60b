import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as api from '@opentelemetry/api';
import { Registry } from 'prom-client';
import { ConfigurationError } from '../../../src';
import { combineInstrumentation, type Instrumentation } from '../../../src/core';
import { METRICS_DEFAULTS, warrenMetrics, warrenTracing } from '../../../src/observability';
import { resolveMetricsOptions, resolveTracingOptions } from '../../../src/observability/options';
import { SeriesMetric } from '../../../src/observability/series-metric';
import {
  formatTraceparent,
  isWritableContext,
  parseTraceparent,
} from '../../../src/observability/trace-context';

describe('observability options', () => {
  it('fills the documented defaults and names path, rule and value when one is wrong', () => {
    const resolved = resolveMetricsOptions();
    assert.equal(resolved.prefix, METRICS_DEFAULTS.prefix);
    assert.equal(resolved.queueDepthCacheMs, 5000);
    assert.ok(Object.isFrozen(resolved));
    assert.throws(
      () => resolveMetricsOptions({ queueDepthCacheMs: -1 }),
      (e: unknown) =>
        e instanceof ConfigurationError &&
        e.message === 'metrics.queueDepthCacheMs must be an integer >= 0 (got -1)',
    );
    assert.throws(() => resolveMetricsOptions({ prefix: 'bad-prefix' }), ConfigurationError);
    assert.throws(() => resolveMetricsOptions({ durationBuckets: [] }), ConfigurationError);
    assert.equal(resolveTracingOptions().traces, 'link');
    assert.throws(
      () => resolveTracingOptions({ traces: 'one' as never }),
      /tracing.traces must be 'link' or 'keep' \(got 'one'\)/,
    );
  });

  it('registers on the registry it is given, and on its own otherwise', () => {
    const registry = new Registry();
    assert.equal(warrenMetrics({ registry }).registry, registry);
    assert.ok(registry.getSingleMetric('warren_jobs_completed_total'));
    assert.notEqual(warrenMetrics().registry, registry);
  });
});

describe('SeriesMetric', () => {
  it('counts an observation equal to a bound in that bucket, cumulatively, with sum and count', async () => {
    const metric = new SeriesMetric('x_seconds', 'help', 'histogram', ['job'], [0.1, 1]);
    const cell = metric.cell('a');
    for (const v of [0.1, 0.5, 1, 7]) cell.observe(v);
    const { values } = await metric.get();
    assert.deepEqual(
      values.map((v) => [v.metricName, v.labels.le, v.value]),
      [
        ['x_seconds_bucket', 0.1, 1],
        ['x_seconds_bucket', 1, 3],
        ['x_seconds_bucket', '+Inf', 4],
        ['x_seconds_sum', undefined, 8.6],
        ['x_seconds_count', undefined, 4],
      ],
    );
    metric.reset();
    assert.equal(metric.cell('a').count, 0);
  });
});

describe('trace context headers', () => {
  it('reads a valid traceparent (string or bytes) with its tracestate, and ignores malformed ones', () => {
    const header = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const context = parseTraceparent(api, Buffer.from(header), 'a=1')!;
    assert.equal(context.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(context.isRemote, true);
    assert.equal(context.traceState?.get('a'), '1');
    assert.equal(formatTraceparent(context), header);
    for (const bad of [
      undefined,
      42,
      '',
      `${header}-x`,
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      header.toUpperCase(),
      `01${header.slice(2)}`,
      header.replace('-00f0', '_00f0'),
      header.replace('a3ce', 'a3cg'),
      header.slice(0, -1),
    ])
      assert.equal(parseTraceparent(api, bad, undefined), undefined, String(bad));
  });

  it('reads the sampled flag from the last bit and tolerates surrounding whitespace', () => {
    const header = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-';
    assert.equal(parseTraceparent(api, `${header}00`, undefined)?.traceFlags, 0);
    assert.equal(parseTraceparent(api, `${header}03`, undefined)?.traceFlags, 1);
    assert.equal(parseTraceparent(api, ` ${header}01\n`, undefined)?.spanId, '00f067aa0ba902b7');
    assert.equal(parseTraceparent(api, `${header}01`, '')?.traceState, undefined);
  });

  it('writes only a span context the API deems valid', () => {
    const valid = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 };
    for (const context of [
      valid,
      { ...valid, traceId: '0'.repeat(32) },
      { ...valid, spanId: '0'.repeat(16) },
      { ...valid, traceId: valid.traceId.slice(1) },
      { ...valid, spanId: `${valid.spanId}0` },
      { ...valid, traceId: valid.traceId.replace('b', 'x') },
      { ...valid, spanId: valid.spanId.toUpperCase() },
    ])
      assert.equal(isWritableContext(context), api.isSpanContextValid(context), JSON.stringify(context));
  });

  it('starts no span and writes no header without a tracer provider (the API alone is a no-op)', () => {
    const headers: Record<string, unknown> = {};
    const end = warrenTracing().publish!({
      name: 'a.b',
      jobId: '1',
      queue: 'q',
      exchange: '',
      routingKey: 'q',
      correlationId: undefined,
      bytes: 2,
      delayMs: 0,
      origin: 'user',
      headers,
    });
    end!(undefined);
    assert.deepEqual(headers, {});
  });
});

describe('combineInstrumentation', () => {
  it('runs every hook, nesting the scopes in order, and ends each once', () => {
    const calls: string[] = [];
    const make = (name: string): Instrumentation => ({
      publish: () => (error) => calls.push(`${name} published ${String(error)}`),
      process: () => ({
        run: (fn) => {
          calls.push(`${name} enters`);
          const result = fn();
          calls.push(`${name} leaves`);
          return result;
        },
        carry: (headers) => {
          headers[name] = true;
        },
        end: (outcome) => calls.push(`${name} ends ${outcome.kind}`),
      }),
    });
    assert.equal(combineInstrumentation([]), undefined);
    const both = combineInstrumentation([make('a'), make('b')])!;
    both.publish!({} as never)!(undefined);
    const scope = both.process!({} as never)!;
    assert.equal(
      scope.run(() => 42),
      42,
    );
    const headers: Record<string, unknown> = {};
    scope.carry(headers);
    scope.end({ kind: 'completed' });
    assert.deepEqual(headers, { a: true, b: true });
    assert.deepEqual(calls, [
      'a published undefined',
      'b published undefined',
      'a enters',
      'b enters',
      'b leaves',
      'a leaves',
      'a ends completed',
      'b ends completed',
    ]);
  });
});

describe('the Grafana dashboard in examples/', () => {
  it('queries only metrics warrenMetrics() registers', () => {
    const root = join(__dirname, '..', '..', '..', '..');
    const dashboard = readFileSync(join(root, 'examples', 'grafana', 'warren-dashboard.json'), 'utf8');
    const used = new Set(
      [...dashboard.matchAll(/\bwarren_[a-z_]+/g)].map((m) => m[0].replace(/_bucket$/, '')),
    );
    const registry = warrenMetrics({ registry: new Registry() }).registry;
    const missing = [...used].filter((name) => !registry.getSingleMetric(name));
    assert.ok(used.size >= 10, `the dashboard uses ${used.size} metrics`);
    assert.deepEqual(missing, []);
  });
});

describe('optional peers', () => {
  it('loads neither prom-client nor @opentelemetry/api with warren or warren/observability, until a factory is called', () => {
    const root = join(__dirname, '..', '..', '..');
    const script = `
      const loaded = () => Object.keys(require.cache).filter((k) => /prom-client|@opentelemetry/.test(k)).length;
      require(${JSON.stringify(join(root, 'src', 'index.js'))});
      const observability = require(${JSON.stringify(join(root, 'src', 'observability', 'index.js'))});
      const before = loaded();
      observability.warrenMetrics();
      console.log(JSON.stringify({ before, after: loaded() }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as {
      before: number;
      after: number;
    };
    assert.equal(out.before, 0);
    assert.ok(out.after > 0, 'warrenMetrics() loads prom-client');
  });
});
