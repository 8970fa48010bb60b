import { randomUUID } from 'node:crypto';
import type { Message, Options } from 'amqplib';
import { DecodeError, PublishError, type WarrenErrorContext } from '../core';
import { HEADERS, JSON_CONTENT_TYPE } from './headers';

/**
 * The wire format (docs/reference/wire-format.md): the payload is the body as UTF-8 JSON, unwrapped;
 * `type` is the job name, `message_id` the job id, persistent, `timestamp` in seconds, warren's
 * state in `warren-*` headers. Any AMQP client in any language can enqueue a job this way.
 */
export interface OutgoingJob {
  readonly name: string;
  readonly jobId: string;
  readonly body: Buffer;
  readonly attempt: number;
  readonly enqueuedAt: number;
  readonly priority?: number | undefined;
  readonly correlationId?: string | undefined;
  readonly headers?: Readonly<Record<string, unknown>> | undefined;
  readonly deliverAt?: number | undefined;
  readonly maxAttempts?: number | undefined;
}

export interface DecodedJob {
  readonly name: string;
  readonly jobId: string;
  readonly data: unknown;
  readonly attempt: number;
  readonly enqueuedAt: number;
  readonly deliverAt: number | undefined;
  readonly maxAttempts: number | undefined;
  readonly redeliveries: number;
  readonly headers: Readonly<Record<string, unknown>>;
  /**
   * warren control headers present with a value that is no integer (`warren-attempt: 'three'`): the
   * worker dead-letters such a job as `invalid-headers` rather than guess. Empty when all are sane.
   */
  readonly headerProblems: readonly string[];
}

/**
 * The payload as UTF-8 JSON. A payload JSON cannot carry (nested too deep for the stack, circular, a
 * bigint) throws PUBLISH_UNENCODABLE instead of the engine's raw RangeError or TypeError.
 */
export function encodeBody(data: unknown, context: WarrenErrorContext = {}): Buffer {
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch (error) {
    throw new PublishError(
      'PUBLISH_UNENCODABLE',
      `the payload cannot be encoded as JSON: ${(error as Error).message}`,
      { ...context, cause: error },
    );
  }
  // JSON.stringify(undefined) is undefined: a job without data travels as JSON null.
  return Buffer.from(json === undefined ? 'null' : json, 'utf8');
}

/** Rejects bytes that are not UTF-8 instead of decoding them into replacement characters. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function jobProperties(job: OutgoingJob): Options.Publish {
  const headers: Record<string, unknown> = {
    ...job.headers,
    [HEADERS.attempt]: job.attempt,
    [HEADERS.enqueuedAt]: job.enqueuedAt,
  };
  if (job.deliverAt !== undefined) headers[HEADERS.deliverAt] = job.deliverAt;
  if (job.maxAttempts !== undefined) headers[HEADERS.maxAttempts] = job.maxAttempts;
  const properties: Options.Publish = {
    contentType: JSON_CONTENT_TYPE,
    type: job.name,
    messageId: job.jobId,
    persistent: true,
    mandatory: true,
    timestamp: Math.floor(job.enqueuedAt / 1000),
    headers,
  };
  if (job.priority !== undefined) properties.priority = job.priority;
  if (job.correlationId !== undefined) properties.correlationId = job.correlationId;
  return properties;
}

/** Decodes a delivery into a job, or throws a DecodeError that says what is wrong with it. */
export function decodeJob(message: Pick<Message, 'content' | 'properties'>, now: number): DecodedJob {
  const props = message.properties;
  const headers = (props.headers ?? {}) as Record<string, unknown>;
  const name = typeof props.type === 'string' ? props.type : '';
  const jobId =
    typeof props.messageId === 'string' && props.messageId.length > 0 ? props.messageId : randomUUID();
  if (name.length === 0) throw new DecodeError('message has no `type` property naming its job', { jobId });
  const contentType = typeof props.contentType === 'string' ? props.contentType.toLowerCase() : undefined;
  if (contentType !== undefined && !contentType.startsWith(JSON_CONTENT_TYPE)) {
    throw new DecodeError(`content type '${props.contentType}' is not ${JSON_CONTENT_TYPE}`, {
      jobName: name,
      jobId,
    });
  }
  let text: string;
  try {
    text = STRICT_UTF8.decode(message.content);
  } catch (error) {
    throw new DecodeError('body is not valid UTF-8', { jobName: name, jobId, cause: error });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new DecodeError(`body is not valid JSON: ${(error as Error).message}`, {
      jobName: name,
      jobId,
      cause: error,
    });
  }
  const timestampMs = typeof props.timestamp === 'number' ? props.timestamp * 1000 : undefined;
  const headerProblems: string[] = [];
  const control = (header: string): number | undefined => {
    const value = headers[header];
    if (value === undefined) return undefined;
    const n = positiveInteger(value);
    if (n === undefined) headerProblems.push(`${header} is not an integer >= 0 (got ${showValue(value)})`);
    return n;
  };
  return {
    name,
    jobId,
    data,
    attempt: control(HEADERS.attempt) ?? 1,
    // Informational only: a garbage value falls back to the AMQP timestamp.
    enqueuedAt: positiveInteger(headers[HEADERS.enqueuedAt]) ?? timestampMs ?? now,
    deliverAt: control(HEADERS.deliverAt),
    maxAttempts: control(HEADERS.maxAttempts),
    redeliveries: control(HEADERS.redeliveries) ?? 0,
    headers,
    headerProblems,
  };
}

function showValue(value: unknown): string {
  try {
    const text = typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value));
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  } catch {
    return typeof value;
  }
}

/** Header values from foreign publishers can be strings, bigints or garbage: accept only sane integers. */
function positiveInteger(value: unknown): number | undefined {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && value.trim() !== ''
        ? Number(value)
        : typeof value === 'bigint'
          ? Number(value)
          : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}
