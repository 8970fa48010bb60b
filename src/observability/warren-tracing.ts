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
import { formatTraceparent, isWritableContext, parseTraceparent } from './trace-context';

/**
 * OpenTelemetry spans per the messaging semantic conventions (docs/reference/metrics-and-traces.md): a PRODUCER `send` span per
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
  const traced: Traced = {
    api,
    tracer,
    keep: resolved.traces === 'keep',
    sendNames: new SpanNames('send '),
    processNames: new SpanNames('process '),
  };
  return {
    publish: (info) => publishSpan(traced, info),
    process: (info) => processSpan(traced, info),
  };
}

/** What the hooks share, made once per warrenTracing() call. */
interface Traced {
  readonly api: typeof Api;
  readonly tracer: Api.Tracer;
  readonly keep: boolean;
  readonly sendNames: SpanNames;
  readonly processNames: SpanNames;
}

/** Span names by job name, spelled once: the names are the topology's jobs, a bounded set. */
class SpanNames {
  private readonly names = new Map<string, string>();
  constructor(private readonly prefix: string) {}
  of(job: string): string {
    const known = this.names.get(job);
    if (known !== undefined) return known;
    const name = this.prefix + job;
    this.names.set(job, name);
    return name;
  }
}

function publishSpan({ api, tracer, sendNames }: Traced, info: PublishInfo): (error: unknown) => void {
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
  const span = tracer.startSpan(sendNames.of(info.name), { kind: api.SpanKind.PRODUCER, attributes }, parent);
  const context = span.spanContext();
  if (isWritableContext(context)) {
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

function processSpan(traced: Traced, info: ProcessInfo): ProcessScope {
  const { api, keep } = traced;
  const headers = info.headers;
  const previous = parseTraceparent(api, headers[HEADERS.traceLink], undefined);
  const origin =
    previous !== undefined && !keep
      ? undefined
      : parseTraceparent(api, headers[HEADERS.traceparent], headers[HEADERS.tracestate]);
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
  const options: Api.SpanOptions =
    links === undefined
      ? { kind: api.SpanKind.CONSUMER, attributes }
      : { kind: api.SpanKind.CONSUMER, attributes, links };
  const span = traced.tracer.startSpan(traced.processNames.of(info.name), options, parent);
  // The parent holds nothing but its span, which this one replaces: the root plus this span is the same.
  return new TracingScope(api, span, api.trace.setSpan(api.ROOT_CONTEXT, span));
}

/** One handler run's span: active while the handler runs, linked from a republish, ended once. */
class TracingScope implements ProcessScope {
  constructor(
    private readonly api: typeof Api,
    private readonly span: Api.Span,
    private readonly active: Api.Context,
  ) {}

  run<T>(fn: () => T): T {
    return this.api.context.with(this.active, fn);
  }

  carry(out: Record<string, unknown>): void {
    const context = this.span.spanContext();
    if (isWritableContext(context)) out[HEADERS.traceLink] = formatTraceparent(context);
  }

  end(outcome: ProcessOutcome): void {
    if (outcome.kind === 'failed') fail(this.api, this.span, outcome.error);
    else if (outcome.kind === 'aborted') this.span.setAttribute('warren.job.aborted', true);
    this.span.end();
  }
}

function fail(api: typeof Api, span: Api.Span, error: unknown): void {
  const exception = error instanceof Error ? error : new Error(String(error));
  span.recordException(exception);
  const code = (error as { code?: unknown } | null)?.code;
  span.setAttribute('error.type', typeof code === 'string' ? code : exception.name);
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: exception.message });
}
