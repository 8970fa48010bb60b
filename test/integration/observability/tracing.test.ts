import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { defineTopology, Job, UnrecoverableError, type JobContext, type JobHandler } from '../../../src';
import { warrenTracing, type TracingOptions } from '../../../src/observability';
import { cleanup, rawConnection, testWarren } from '../../support/test-broker';
import { waitFor } from '../../support/wait-for';
import { planOf } from '../../../src/warren';

const topology = defineTopology({ queues: { work: {} } });

/** Fails its first attempt; each run opens a span of its own, which must nest under warren's. */
@Job('trace.flaky', { queue: 'work', attempts: 3, backoff: { type: 'fixed', delayMs: 100 } })
class Flaky implements JobHandler<object> {
  handle(_data: object, ctx: JobContext) {
    trace.getTracer('handler').startSpan(`inner ${ctx.attempt}`).end();
    if (ctx.attempt === 1) throw new Error('first attempt fails');
  }
}

@Job('trace.ok', { queue: 'work' })
class Ok implements JobHandler<object> {
  handle() {}
}

/** Fails for good while `broken` holds: dead-lettered, then replayed once repaired. */
let broken = true;
@Job('trace.repairable', { queue: 'work' })
class Repairable implements JobHandler<object> {
  handle() {
    if (broken) throw new UnrecoverableError('broken until repaired');
  }
}

function tracing(options: TracingOptions = {}) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, provider, instrumentation: warrenTracing({ ...options, tracerProvider: provider }) };
}

const named = (spans: ReadableSpan[], name: string) => {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one span named '${name}' (of ${spans.map((s) => s.name).join(', ')})`);
  return found[0]!;
};
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const processSpans = (spans: ReadableSpan[], name: string) =>
  spans
    .filter((s) => s.name === `process ${name}`)
    .sort((a, b) => Number(a.attributes['warren.job.attempt']) - Number(b.attributes['warren.job.attempt']));

describe('OpenTelemetry traces', () => {
  const manager = new AsyncLocalStorageContextManager();
  before(() => context.setGlobalContextManager(manager.enable()));
  after(() => context.disable());
  afterEach(cleanup);

  it('follows a job from the request that published it to a failed attempt, and links the retry to it', async () => {
    const { exporter, provider, instrumentation } = tracing();
    trace.setGlobalTracerProvider(provider);
    const warren = await testWarren({ topology, handlers: [new Flaky()], instrumentation });
    await warren.start();
    const request = provider.getTracer('app').startSpan('POST /signup');
    const published = await context.with(trace.setSpan(context.active(), request), () =>
      warren.publish('trace.flaky', { n: 1 }, { correlationId: 'conv-1' }),
    );
    request.end();
    await waitFor(
      () => exporter.getFinishedSpans().filter((s) => s.name === 'process trace.flaky').length === 2,
      {
        what: 'two process spans',
      },
    );
    const spans = exporter.getFinishedSpans();
    const send = named(spans, 'send trace.flaky');
    const [first, second] = processSpans(spans, 'trace.flaky');

    assert.equal(send.kind, SpanKind.PRODUCER);
    assert.equal(send.spanContext().traceId, request.spanContext().traceId);
    assert.equal(parentOf(send), request.spanContext().spanId);
    assert.equal(send.attributes['messaging.system'], 'rabbitmq');
    assert.equal(send.attributes['messaging.operation.type'], 'send');
    assert.equal(send.attributes['messaging.message.id'], published.jobId);
    assert.equal(send.attributes['messaging.message.conversation_id'], 'conv-1');
    const queueName = planOf(warren).queues.find((q) => q.role === 'job' && q.key === 'work')!.name;
    // A queue with no exchange of its own: the default exchange, routed by queue name.
    assert.equal(send.attributes['messaging.destination.name'], '');
    assert.equal(send.attributes['messaging.rabbitmq.destination.routing_key'], queueName);

    assert.equal(first!.kind, SpanKind.CONSUMER);
    assert.equal(
      first!.spanContext().traceId,
      send.spanContext().traceId,
      'the first run continues the trace',
    );
    assert.equal(parentOf(first!), send.spanContext().spanId);
    assert.equal(first!.attributes['messaging.operation.type'], 'process');
    assert.equal(first!.attributes['messaging.destination.subscription.name'], queueName);
    assert.equal(first!.attributes['messaging.message.id'], published.jobId);
    assert.equal(first!.attributes['messaging.message.conversation_id'], 'conv-1');
    assert.equal(first!.status.code, SpanStatusCode.ERROR);
    assert.equal(first!.attributes['error.type'], 'Error');
    assert.equal(first!.events[0]?.name, 'exception');
    assert.equal(parentOf(named(spans, 'inner 1')), first!.spanContext().spanId, "the handler's span nests");

    assert.equal(second!.status.code, SpanStatusCode.UNSET);
    assert.notEqual(second!.spanContext().traceId, send.spanContext().traceId, 'the retry starts a trace');
    assert.equal(parentOf(second!), undefined);
    assert.deepEqual(
      second!.links.map((l) => l.context.spanId),
      [first!.spanContext().spanId],
      'linked to the attempt before',
    );
    assert.equal(parentOf(named(spans, 'inner 2')), second!.spanContext().spanId);
  });

  it("starts a delayed job's run in a trace linked to its publish", async () => {
    const { exporter, instrumentation } = tracing();
    const warren = await testWarren({ topology, handlers: [new Ok()], instrumentation });
    await warren.start();
    await warren.publish('trace.ok', {}, { delayMs: 300 });
    await waitFor(() => exporter.getFinishedSpans().some((s) => s.name === 'process trace.ok'));
    const spans = exporter.getFinishedSpans();
    const send = named(spans, 'send trace.ok');
    const run = named(spans, 'process trace.ok');
    assert.equal(send.attributes['warren.job.delay_ms'], 300);
    assert.notEqual(run.spanContext().traceId, send.spanContext().traceId);
    assert.deepEqual(
      run.links.map((l) => l.context.spanId),
      [send.spanContext().spanId],
    );
  });

  it("with traces: 'keep', a delayed job and its retries stay in the publisher's trace", async () => {
    const { exporter, instrumentation } = tracing({ traces: 'keep' });
    const warren = await testWarren({ topology, handlers: [new Flaky()], instrumentation });
    await warren.start();
    await warren.publish('trace.flaky', {}, { delayMs: 200 });
    await waitFor(() => processSpans(exporter.getFinishedSpans(), 'trace.flaky').length === 2);
    const spans = exporter.getFinishedSpans();
    const send = named(spans, 'send trace.flaky');
    const [first, second] = processSpans(spans, 'trace.flaky');
    const traceId = send.spanContext().traceId;
    assert.deepEqual(
      [first!, second!].map((s) => s.spanContext().traceId),
      [traceId, traceId],
    );
    assert.equal(parentOf(first!), send.spanContext().spanId);
    assert.equal(parentOf(second!), first!.spanContext().spanId);
    assert.deepEqual([first!.links, second!.links], [[], []]);
  });

  it('continues the trace of a job published by plain amqplib with a traceparent header', async () => {
    const { exporter, instrumentation } = tracing();
    const warren = await testWarren({ topology, handlers: [new Ok()], instrumentation });
    await warren.start();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const spanId = '00f067aa0ba902b7';
    const connection = await rawConnection();
    const channel = await connection.createConfirmChannel();
    const queueName = planOf(warren).queues.find((q) => q.role === 'job' && q.key === 'work')!.name;
    channel.sendToQueue(queueName, Buffer.from('{}'), {
      type: 'trace.ok',
      messageId: 'foreign-1',
      contentType: 'application/json',
      headers: { traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'vendor=abc' },
    });
    await channel.waitForConfirms();
    await connection.close();
    await waitFor(() => exporter.getFinishedSpans().some((s) => s.name === 'process trace.ok'));
    const run = named(exporter.getFinishedSpans(), 'process trace.ok');
    assert.equal(run.spanContext().traceId, traceId);
    assert.equal(parentOf(run), spanId);
    assert.equal(run.parentSpanContext?.isRemote, true);
    assert.equal(run.spanContext().traceState?.get('vendor'), 'abc');
    assert.equal(run.attributes['messaging.message.id'], 'foreign-1');
    assert.equal(run.attributes['messaging.destination.name'], '');
    assert.equal(run.attributes['messaging.rabbitmq.destination.routing_key'], queueName);
  });

  it('starts the run of a replayed dead letter in a trace linked to its last attempt', async () => {
    const { exporter, instrumentation } = tracing();
    const warren = await testWarren({ topology, handlers: [new Repairable()], instrumentation });
    await warren.start();
    broken = true;
    const dead = new Promise((resolve) => warren.once('deadLettered', resolve));
    await warren.publish('trace.repairable', {});
    await dead;
    broken = false;
    assert.equal(await warren.deadLetters.replay('work'), 1);
    await waitFor(() => processSpans(exporter.getFinishedSpans(), 'trace.repairable').length === 2);
    const runs = exporter.getFinishedSpans().filter((s) => s.name === 'process trace.repairable');
    const failed = runs.find((s) => s.status.code === SpanStatusCode.ERROR)!;
    const replayed = runs.find((s) => s !== failed)!;
    assert.equal(failed.attributes['error.type'], 'UnrecoverableError');
    assert.notEqual(replayed.spanContext().traceId, failed.spanContext().traceId);
    assert.deepEqual(
      replayed.links.map((l) => l.context.spanId),
      [failed.spanContext().spanId],
    );
  });

  it('starts a trace of its own for each cron firing, whatever context the schedule was made in', async () => {
    const { exporter, provider, instrumentation } = tracing();
    const warren = await testWarren({
      topology,
      handlers: [new Ok()],
      scheduler: { enabled: true },
      instrumentation,
    });
    const ambient = provider.getTracer('app').startSpan('bootstrap');
    await context.with(trace.setSpan(context.active(), ambient), async () => {
      await warren.start();
      await warren.cron.schedule('trace.ok', '* * * * * *', {});
    });
    ambient.end();
    await waitFor(() => exporter.getFinishedSpans().some((s) => s.name === 'process trace.ok'), {
      timeoutMs: 15_000,
    });
    const sends = exporter.getFinishedSpans().filter((s) => s.name === 'send trace.ok');
    assert.ok(sends.length >= 1);
    for (const send of sends) {
      assert.equal(parentOf(send), undefined);
      assert.notEqual(send.spanContext().traceId, ambient.spanContext().traceId);
    }
  });
});
