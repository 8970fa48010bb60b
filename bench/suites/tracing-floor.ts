/**
 * The OpenTelemetry SDK's own floor under warren's tracing (issue 17): CPU µs per span of the SDK with the
 * provider bench/suites/observability.ts uses (every span sampled, BatchSpanProcessor, a no-op
 * exporter, the AsyncLocalStorage context manager), no warren and no broker. One job costs one span on
 * each path (a PRODUCER `send` span on publish, a CONSUMER `process` span on consume), so these figures
 * are the least tracing can add per job, whatever warren does around them.
 *
 *   npm run bench -- tracing-floor [--spans 200000] [--rounds 5]
 *
 * Steps: `bare` startSpan+end; `attrs` with kind and warren's 10–11 messaging attributes; `send` also
 * under the active context with the traceparent written out; `process` with a remote parent (the
 * traceparent a message carries) and the span made active around a no-op call through context.with; `promise-tax` what the async hooks of the AsyncLocalStorage context
 * manager add to each promise once it is in use (Node < 24), per 10 promises (about one job's worth).
 */
import { parseArgs } from 'node:util';
import { context, ROOT_CONTEXT, type Span, SpanKind, trace } from '@opentelemetry/api';
import { noopTracerProvider } from '../lib/noop-tracing';

const { values } = parseArgs({
  options: { spans: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '5' } },
});
const SPANS = Number(values.spans);
const ROUNDS = Number(values.rounds);
const provider = noopTracerProvider();
const tracer = provider.getTracer('warren-floor');
const remote = trace.setSpanContext(ROOT_CONTEXT, {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: 1,
  isRemote: true,
});

function attributes(i: number) {
  return {
    'messaging.system': 'rabbitmq',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': '',
    'messaging.destination.subscription.name': 'bench.jobs',
    'messaging.message.id': `job-${i}`,
    'messaging.message.body.size': 40,
    'warren.job.name': 'bench.job',
    'warren.job.attempt': 1,
    'warren.queue': 'jobs',
    'messaging.rabbitmq.destination.routing_key': 'bench.jobs',
  };
}

const noop = (span: Span) => span;
const headers: Record<string, string> = {};
const steps: Record<string, (i: number) => unknown> = {
  bare: () => tracer.startSpan('process bench.job').end(),
  attrs: (i) =>
    tracer.startSpan('process bench.job', { kind: SpanKind.CONSUMER, attributes: attributes(i) }).end(),
  send: (i) => {
    const span = tracer.startSpan(
      'send bench.job',
      { kind: SpanKind.PRODUCER, attributes: attributes(i) },
      context.active(),
    );
    const { traceId, spanId, traceFlags } = span.spanContext();
    headers.traceparent = `00-${traceId}-${spanId}-0${(traceFlags & 1).toString(16)}`;
    span.end();
  },
  process: (i) => {
    const span = tracer.startSpan(
      'process bench.job',
      { kind: SpanKind.CONSUMER, attributes: attributes(i) },
      remote,
    );
    context.with(trace.setSpan(remote, span), noop, undefined, span);
    span.end();
  },
};

async function promiseTax(n: number, tracked: boolean): Promise<number> {
  const run = async () => {
    const cpu = process.cpuUsage();
    for (let i = 0; i < n; i++) for (let j = 0; j < 10; j++) await Promise.resolve(j);
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / n;
  };
  // Promises made inside context.with carry the context: the async hooks' work is done for each.
  return tracked ? context.with(remote, run) : run();
}

/** The batch processor's export of these spans is counted in: it is part of what a span costs. */
async function timeSteps(step: (i: number) => unknown): Promise<number> {
  const cpu = process.cpuUsage();
  for (let i = 0; i < SPANS; i++) step(i);
  await provider.forceFlush();
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / SPANS;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const results = new Map<string, number[]>();
  const add = (key: string, x: number) => results.set(key, [...(results.get(key) ?? []), x]);
  // Before any context.with, the hooks are off: this is the untracked baseline of the promise tax.
  for (let r = 0; r < ROUNDS; r++) add('10 promises, hooks off', await promiseTax(SPANS / 10, false));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, step] of Object.entries(steps)) add(name, await timeSteps(step));
    add('10 promises, hooks on', await promiseTax(SPANS / 10, true));
  }
  console.log(`tracing floor: ${SPANS} spans a step, ${ROUNDS} rounds (CPU µs each, median)`);
  for (const [key, xs] of results)
    console.log(
      `  ${key.padEnd(24)} ${median(xs).toFixed(2).padStart(6)} µs  (${xs.map((x) => x.toFixed(2)).join(' ')})`,
    );
  await provider.shutdown();
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
