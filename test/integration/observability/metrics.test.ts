import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import {
  defineTopology,
  Job,
  MemoryIdempotencyStore,
  UnrecoverableError,
  type JobContext,
  type JobHandler,
} from '../../../src';
import { warrenMetrics } from '../../../src/observability';
import { cleanup, rawConnection, testWarren } from '../../support/test-broker';
import { waitFor } from '../../support/wait-for';
import { planOf } from '../../../src/warren';

const topology = defineTopology({ queues: { work: {}, guarded: {} } });

@Job('work.ok', { queue: 'work' })
class Ok implements JobHandler<object> {
  handle() {}
}

@Job('work.flaky', { queue: 'work', attempts: 3, backoff: { type: 'fixed', delayMs: 100 } })
class Flaky implements JobHandler<object> {
  handle(_data: object, ctx: JobContext) {
    if (ctx.attempt === 1) throw new Error('first attempt fails');
  }
}

@Job('work.doomed', { queue: 'work' })
class Doomed implements JobHandler<object> {
  handle() {
    throw new UnrecoverableError('never');
  }
}

/** Its own queue: the queue of a job using a breaker pauses while the breaker is open. */
@Job('work.guarded', { queue: 'guarded', attempts: 1, breakers: ['dep'] })
class Guarded implements JobHandler<object> {
  async handle(_data: object, ctx: JobContext) {
    await ctx.breaker('dep').fire(() => Promise.reject(new Error('dependency down')));
  }
}

/** Runs until `release` is called: a job visibly in flight. */
let release: () => void = () => undefined;
@Job('work.slow', { queue: 'work' })
class Slow implements JobHandler<object> {
  handle() {
    return new Promise<void>((resolve) => {
      release = resolve;
    });
  }
}

/** One sample of a metric: the value with exactly these labels (0 when absent). */
async function sample(registry: Registry, name: string, labels: Record<string, string> = {}) {
  const metric = registry.getSingleMetric(name.replace(/_(count|sum)$/, ''));
  assert.ok(metric, `metric ${name} is registered`);
  const { values } = await metric.get();
  const found = values.filter(
    (v) =>
      ((v as { metricName?: string }).metricName ?? name) === name &&
      Object.keys(labels).length === Object.keys(v.labels).length &&
      Object.entries(labels).every(([k, l]) => v.labels[k] === l),
  );
  return found.reduce((sum, v) => sum + v.value, 0);
}

describe('Prometheus metrics', () => {
  afterEach(cleanup);

  it('counts every outcome of real jobs exactly, with foreign job names under one label', async () => {
    const registry = new Registry();
    const metrics = warrenMetrics({ registry, queueDepthCacheMs: 0 });
    const warren = await testWarren({
      topology,
      handlers: [new Ok(), new Flaky(), new Doomed(), new Guarded()],
      breakers: { dep: { volumeThreshold: 1, errorThresholdPercentage: 50, resetTimeoutMs: 60_000 } },
      instrumentation: [metrics],
    });
    let completed = 0;
    let dead = 0;
    warren.on('completed', () => completed++);
    warren.on('deadLettered', () => dead++);
    await warren.start();
    for (let i = 0; i < 3; i++) await warren.publish('work.ok', {});
    await warren.publish('work.flaky', {});
    await warren.publish('work.doomed', {});
    await warren.publish('work.guarded', {});
    const connection = await rawConnection();
    const channel = await connection.createConfirmChannel();
    const queueName = planOf(warren).queues.find((q) => q.role === 'job' && q.key === 'work')!.name;
    channel.sendToQueue(queueName, Buffer.from('{}'), {
      type: `evil.${'x'.repeat(40)}`,
      messageId: 'foreign-1',
      contentType: 'application/json',
    });
    await channel.waitForConfirms();
    await connection.close();
    await waitFor(() => completed === 4 && dead === 3, {
      what: '4 completions and 3 dead letters',
    });

    const q = { queue: 'work' };
    const at = (job: string, extra: Record<string, string> = {}) => ({ job, ...q, ...extra });
    const expect = async (name: string, labels: Record<string, string>, value: number) =>
      assert.equal(await sample(registry, name, labels), value, `${name} ${JSON.stringify(labels)}`);
    await expect('warren_jobs_published_total', at('work.ok'), 3);
    await expect('warren_jobs_published_total', at('work.flaky'), 1);
    await expect('warren_publish_confirm_duration_seconds_count', at('work.ok'), 3);
    await expect('warren_published_bytes_total', at('work.ok'), 6);
    await expect('warren_jobs_started_total', at('work.ok'), 3);
    await expect('warren_jobs_started_total', at('work.flaky'), 2);
    await expect('warren_jobs_started_total', { job: 'work.guarded', queue: 'guarded' }, 1);
    await expect('warren_jobs_completed_total', at('work.ok'), 3);
    await expect('warren_jobs_completed_total', at('work.flaky'), 1);
    await expect('warren_jobs_failed_total', at('work.flaky'), 1);
    await expect('warren_jobs_failed_total', at('work.doomed'), 1);
    await expect('warren_jobs_failed_total', { job: 'work.guarded', queue: 'guarded' }, 1);
    await expect('warren_jobs_retried_total', at('work.flaky'), 1);
    await expect('warren_jobs_dead_lettered_total', at('work.doomed', { reason: 'unrecoverable' }), 1);
    await expect(
      'warren_jobs_dead_lettered_total',
      { job: 'work.guarded', queue: 'guarded', reason: 'attempts-exhausted' },
      1,
    );
    await expect('warren_jobs_dead_lettered_total', at('other', { reason: 'unknown-job' }), 1);
    await expect('warren_job_duration_seconds_count', at('work.flaky', { outcome: 'failed' }), 1);
    await expect('warren_job_duration_seconds_count', at('work.flaky', { outcome: 'completed' }), 1);
    await expect('warren_job_wait_seconds_count', at('work.flaky'), 1);
    await expect('warren_jobs_in_flight', at('work.ok'), 0);
    await expect('warren_breaker_state', { breaker: 'dep', state: 'open' }, 1);
    await expect('warren_breaker_state', { breaker: 'dep', state: 'closed' }, 0);
    await expect('warren_connection_up', {}, 1);
    await expect('warren_cron_leader', {}, 0);
    await expect('warren_queue_messages', { queue: 'work', state: 'dead' }, 2);
    await expect('warren_queue_messages', { queue: 'guarded', state: 'dead' }, 1);
    await expect('warren_queue_messages', { queue: 'work', state: 'ready' }, 0);
    await expect('warren_delayed_messages', {}, 0);

    const text = await metrics.metrics();
    assert.doesNotMatch(text, /evil\./, 'a foreign job name never becomes a label value');
    assert.match(text, /^# TYPE warren_jobs_completed_total counter$/m);
  });

  it('serves the registry as Prometheus text through a plain http handler', async () => {
    const metrics = warrenMetrics();
    await testWarren({ topology, handlers: [new Ok()], instrumentation: metrics });
    const { createServer } = await import('node:http');
    const server = createServer(metrics.handler).listen(0);
    try {
      await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as { port: number };
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type')!, /^text\/plain/);
      assert.match(await response.text(), /^warren_connection_up 1$/m);
    } finally {
      server.close();
    }
  });

  it('shows a running job in flight, and counts a copy of a completed job id as a duplicate', async () => {
    const registry = new Registry();
    const warren = await testWarren({
      topology,
      handlers: [new Ok(), new Slow()],
      idempotency: new MemoryIdempotencyStore(),
      instrumentation: [warrenMetrics({ registry })],
    });
    await warren.start();
    const slow = { job: 'work.slow', queue: 'work' };
    await warren.publish('work.slow', {});
    await waitFor(async () => (await sample(registry, 'warren_jobs_in_flight', slow)) === 1, {
      what: 'the slow job in flight',
    });
    release();
    await waitFor(async () => (await sample(registry, 'warren_jobs_completed_total', slow)) === 1);
    assert.equal(await sample(registry, 'warren_jobs_in_flight', slow), 0);

    let duplicates = 0;
    warren.on('duplicate', () => duplicates++);
    await warren.publish('work.ok', {}, { jobId: 'once' });
    await warren.publish('work.ok', {}, { jobId: 'once' });
    await waitFor(() => duplicates === 1, { what: 'the duplicate' });
    const ok = { job: 'work.ok', queue: 'work' };
    assert.equal(await sample(registry, 'warren_jobs_duplicate_total', ok), 1);
    assert.equal(await sample(registry, 'warren_jobs_completed_total', ok), 1);
    assert.equal(await sample(registry, 'warren_jobs_started_total', ok), 1);
  });
});
