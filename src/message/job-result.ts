import type { Message } from 'amqplib';
import { HEADERS, JSON_CONTENT_TYPE } from './headers';
import { parseJsonObject } from '../core';

/** RabbitMQ's direct reply-to pseudo-queue: a publisher consumes it (noAck) to receive answers. */
export const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';

/** The per-channel address the broker writes into `reply_to`: `amq.rabbitmq.reply-to.<opaque>`. */
const DIRECT_REPLY_ADDRESS = /^amq\.rabbitmq\.reply-to\.[A-Za-z0-9+/=._-]{1,200}$/;

/** Version of the result message body. */
export const JOB_RESULT_VERSION = 1;

/** What a worker answers to a job published for its result (correlation id: the job id). */
export type JobResultBody =
  | { readonly v: 1; readonly jobId: string; readonly status: 'completed'; readonly result?: unknown }
  | {
      readonly v: 1;
      readonly jobId: string;
      readonly status: 'failed';
      readonly error: { readonly name: string; readonly message: string; readonly code?: string };
    };

/** Only RabbitMQ's per-channel direct reply-to addresses: never a queue a forged message names. */
export function isDirectReplyAddress(value: string): boolean {
  return DIRECT_REPLY_ADDRESS.test(value);
}

/**
 * Where a delivery's result goes: its `reply_to` (first delivery) or the `warren-reply-to` header (a
 * retry), only when it is a direct reply-to address; undefined otherwise (no answer is sent).
 */
export function resultAddressOf(properties: Message['properties']): string | undefined {
  const fromProperty = properties.replyTo as unknown;
  if (typeof fromProperty === 'string' && isDirectReplyAddress(fromProperty)) return fromProperty;
  const fromHeader = properties.headers?.[HEADERS.replyTo] as unknown;
  if (typeof fromHeader === 'string' && isDirectReplyAddress(fromHeader)) return fromHeader;
  return undefined;
}

/** The result's body; a return value JSON cannot encode is answered as a failure saying so. */
export function encodeJobResult(body: JobResultBody): Buffer {
  try {
    return Buffer.from(JSON.stringify(body));
  } catch (error) {
    const message = `the handler's result could not be encoded as JSON: ${(error as Error).message}`;
    return Buffer.from(
      JSON.stringify({ v: 1, jobId: body.jobId, status: 'failed', error: { name: 'TypeError', message } }),
    );
  }
}

/** A parsed result, or undefined when it is not one (answers are untrusted like any message). */
export function parseJobResult(content: Buffer): JobResultBody | undefined {
  const b = parseJsonObject(content);
  if (b === undefined || b.v !== JOB_RESULT_VERSION || typeof b.jobId !== 'string') return undefined;
  if (b.status === 'completed') return b as JobResultBody;
  const e = b.error as Partial<Record<string, unknown>> | undefined;
  if (b.status === 'failed' && e && typeof e.name === 'string' && typeof e.message === 'string')
    return b as JobResultBody;
  return undefined;
}

export const JOB_RESULT_CONTENT_TYPE = JSON_CONTENT_TYPE;
