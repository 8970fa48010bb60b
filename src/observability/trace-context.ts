import type * as Api from '@opentelemetry/api';

/**
 * The W3C `traceparent` header (version 00): `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. Spelled
 * here rather than through the global propagator so that warren's headers work with no propagator set up.
 */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export function formatTraceparent(context: Api.SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-0${(context.traceFlags & 1).toString(16)}`;
}

/** The span context a header carries, or undefined when it is absent or malformed (a foreign header). */
export function parseTraceparent(
  api: typeof Api,
  header: unknown,
  tracestate: unknown,
): Api.SpanContext | undefined {
  const text = Buffer.isBuffer(header) ? header.toString('latin1') : header;
  if (typeof text !== 'string') return undefined;
  const match = TRACEPARENT.exec(text.trim());
  if (match === null) return undefined;
  const context: Api.SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16) & 1,
    isRemote: true,
  };
  if (!api.isSpanContextValid(context)) return undefined;
  const state = Buffer.isBuffer(tracestate) ? tracestate.toString('latin1') : tracestate;
  if (typeof state === 'string' && state.length > 0 && state.length <= 512)
    return { ...context, traceState: api.createTraceState(state) };
  return context;
}
