import type * as Api from '@opentelemetry/api';

/**
 * The W3C `traceparent` header (version 00): `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. Spelled
 * here rather than through the global propagator so that warren's headers work with no propagator set up.
 * Read by hand, once per delivery: a regex with captures plus the API's isSpanContextValid (two more
 * regexes) cost about a microsecond a job, a fifth of what warren's own tracing added (profiled).
 */
const TRACEPARENT_LENGTH = 55;
const INVALID_TRACE_ID = '00000000000000000000000000000000';
const INVALID_SPAN_ID = '0000000000000000';

export function formatTraceparent(context: Api.SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-0${(context.traceFlags & 1).toString(16)}`;
}

/** The span context a header carries, or undefined when it is absent or malformed (a foreign header). */
export function parseTraceparent(
  api: typeof Api,
  header: unknown,
  tracestate: unknown,
): Api.SpanContext | undefined {
  const raw = Buffer.isBuffer(header) ? header.toString('latin1') : header;
  if (typeof raw !== 'string') return undefined;
  const text = raw.length === TRACEPARENT_LENGTH ? raw : raw.trim();
  if (!isTraceparent(text)) return undefined;
  const traceId = text.slice(3, 35);
  const spanId = text.slice(36, 52);
  if (traceId === INVALID_TRACE_ID || spanId === INVALID_SPAN_ID) return undefined;
  const context: Api.SpanContext = { traceId, spanId, traceFlags: hexValue(text, 54) & 1, isRemote: true };
  const state = Buffer.isBuffer(tracestate) ? tracestate.toString('latin1') : tracestate;
  if (typeof state === 'string' && state.length > 0 && state.length <= 512)
    return { ...context, traceState: api.createTraceState(state) };
  return context;
}

/**
 * A span context that may be written into a header: hex ids of the right lengths, not all zeros. The API's
 * isSpanContextValid without its regexes, and as lenient: it too takes uppercase hex.
 */
export function isWritableContext(context: Api.SpanContext): boolean {
  const { traceId, spanId } = context;
  return (
    traceId.length === 32 &&
    spanId.length === 16 &&
    traceId !== INVALID_TRACE_ID &&
    spanId !== INVALID_SPAN_ID &&
    allHex(traceId, 0, 32, true) &&
    allHex(spanId, 0, 16, true)
  );
}

/** `00-`, 32 lowercase hex, `-`, 16 lowercase hex, `-`, 2 lowercase hex: nothing more, nothing less. */
function isTraceparent(text: string): boolean {
  return (
    text.length === TRACEPARENT_LENGTH &&
    text.charCodeAt(0) === 0x30 &&
    text.charCodeAt(1) === 0x30 &&
    text.charCodeAt(2) === 0x2d &&
    text.charCodeAt(35) === 0x2d &&
    text.charCodeAt(52) === 0x2d &&
    allHex(text, 3, 35) &&
    allHex(text, 36, 52) &&
    allHex(text, 53, 55)
  );
}

/** Lowercase hex digits only, or (`anyCase`) upper and lower. */
function allHex(text: string, from: number, to: number, anyCase = false): boolean {
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    if (hexDigit(anyCase && code >= 0x41 && code <= 0x46 ? code + 0x20 : code) < 0) return false;
  }
  return true;
}

/** The value of a lowercase hex digit, or -1. */
function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x61 && code <= 0x66) return code - 0x57;
  return -1;
}

function hexValue(text: string, at: number): number {
  return hexDigit(text.charCodeAt(at));
}
