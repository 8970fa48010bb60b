import type * as Api from '@opentelemetry/api';
import {
  WARREN_VERSION,
  type Instrumentation,
  type ProcessInfo,
  type ProcessOutcome,
  type ProcessScope,
  type PublishInfo,
} from '../core';
import { HEADERS } from '../message';
import { loadPeer } from './load-peer';
import { resolveTracingOptions, type TracingOptions } from './options';
import { formatTraceparent, parseTraceparent } from './trace-context';

/**
 * OpenTelemetry spans per the messaging semantic conventions (README, "Traces"): a PRODUCER `send` span per
 * publish and a CONSUMER `process` span per handler run, active while the handler runs so its own spans
 * nest. Context travels in `traceparent`/`tracestate`; a retry, a delayed job's run and a replayed dead
 * letter start a new trace linked to the span before it (or continue it: `traces: 'keep'`).
 *
 * @example
 * const warren = await createWarren({ topology, handlers, instrumentation: [warrenTracing()] });
 */
export function warrenTracing(options: TracingOptions = {}): Instrumentation {
  const resolved = resolveTracingOptions(options);
  const api = loadPeer<typeof Api>('@opentelemetry/api', 'warrenTracing()');
  const provider = (resolved.tracerProvider as Api.TracerProvider | undefined) ?? api.trace;
  const tracer = provider.getTracer('warren', WARREN_VERSION);
  const keep = resolved.traces === 'keep';
  return {
    publish: (info) => publishSpan(api, tracer, info),
    process: (info) => processSpan(api, tracer, info, keep),
  };
}

function publishSpan(api: typeof Api, tracer: Api.Tracer, info: PublishInfo): (error: unknown) => void {
  // A cron firing is nobody's child: whatever context the timer inherited is not its cause.
  const parent = info.origin === 'cron' ? api.ROOT_CONTEXT : api.context.active();
  const attributes: Api.Attributes = {
    'messaging.system': 'rabbitmq',
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'messaging.destination.name': info.exchange,
    'messaging.message.id': info.jobId,
    'messaging.message.body.size': info.bytes,
    'warren.job.name': info.name,
    'warren.queue': info.queue,
  };
  if (info.routingKey !== '') attributes['messaging.rabbitmq.destination.routing_key'] = info.routingKey;
  if (info.correlationId !== undefined) attributes['messaging.message.conversation_id'] = info.correlationId;
  if (info.delayMs > 0) attributes['warren.job.delay_ms'] = info.delayMs;
  const span = tracer.startSpan(`send ${info.name}`, { kind: api.SpanKind.PRODUCER, attributes }, parent);
  const context = span.spanContext();
  if (api.isSpanContextValid(context)) {
    const traceparent = formatTraceparent(context);
    info.headers[HEADERS.traceparent] = traceparent;
    const state = context.traceState?.serialize();
    if (state) info.headers[HEADERS.tracestate] = state;
    // The run happens later than the publish's trace is worth keeping open: it links back instead.
    if (info.delayMs > 0) info.headers[HEADERS.traceLink] = traceparent;
  }
  return (error) => {
    if (error !== undefined) fail(api, span, error);
    span.end();
  };
}

function processSpan(api: typeof Api, tracer: Api.Tracer, info: ProcessInfo, keep: boolean): ProcessScope {
  const headers = info.headers;
  const previous = parseTraceparent(api, headers[HEADERS.traceLink], undefined);
  const origin = parseTraceparent(api, headers[HEADERS.traceparent], headers[HEADERS.tracestate]);
  let parent = api.ROOT_CONTEXT;
  let links: Api.Link[] | undefined;
  if (previous !== undefined && !keep) links = [{ context: previous }];
  else if (previous !== undefined) parent = api.trace.setSpanContext(parent, previous);
  else if (origin !== undefined) parent = api.trace.setSpanContext(parent, origin);
  const attributes: Api.Attributes = {
    'messaging.system': 'rabbitmq',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': info.exchange,
    'messaging.destination.subscription.name': info.queueName,
    'messaging.message.id': info.jobId,
    'messaging.message.body.size': info.bytes,
    'warren.job.name': info.name,
    'warren.job.attempt': info.attempt,
    'warren.queue': info.queue,
  };
  if (info.routingKey !== '') attributes['messaging.rabbitmq.destination.routing_key'] = info.routingKey;
  if (info.correlationId !== undefined) attributes['messaging.message.conversation_id'] = info.correlationId;
  const span = tracer.startSpan(
    `process ${info.name}`,
    { kind: api.SpanKind.CONSUMER, attributes, ...(links ? { links } : {}) },
    parent,
  );
  const active = api.trace.setSpan(parent, span);
  return {
    run: (fn) => api.context.with(active, fn),
    carry: (out) => {
      const context = span.spanContext();
      if (api.isSpanContextValid(context)) out[HEADERS.traceLink] = formatTraceparent(context);
    },
    end: (outcome: ProcessOutcome) => {
      if (outcome.kind === 'failed') fail(api, span, outcome.error);
      else if (outcome.kind === 'aborted') span.setAttribute('warren.job.aborted', true);
      span.end();
    },
  };
}

function fail(api: typeof Api, span: Api.Span, error: unknown): void {
  const exception = error instanceof Error ? error : new Error(String(error));
  span.recordException(exception);
  const code = (error as { code?: unknown } | null)?.code;
  span.setAttribute('error.type', typeof code === 'string' ? code : exception.name);
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: exception.message });
}
