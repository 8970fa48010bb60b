import type { IncomingMessage, ServerResponse } from 'node:http';
import { Refusal } from './request-guard';

const MAX_BODY_BYTES = 1024 * 1024;

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** Sends a body with the dashboard's security headers (no framing, no sniffing, no caching). */
export function send(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'content-security-policy': "default-src 'self'; frame-ancestors 'none'",
  });
  response.end(body);
}

export function sendJson(response: ServerResponse, status: number, value: unknown): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

/**
 * Reads a JSON object body (at most 1 MiB). A body a framework already parsed (`express.json()`, NestJS's
 * default body parser) is taken from `request.body`, since its stream has been read.
 */
export async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const parsed = (request as { body?: unknown }).body;
  if (parsed !== null && typeof parsed === 'object' && !Buffer.isBuffer(parsed) && !Array.isArray(parsed))
    return parsed as Record<string, unknown>;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Refusal(413, 'body too large');
    chunks.push(chunk as Buffer);
  }
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not an object');
    return value as Record<string, unknown>;
  } catch {
    throw new Refusal(400, 'body must be a JSON object');
  }
}

/** Opens a server-sent event stream; returns a function that sends one event (data already JSON). */
export function openEventStream(response: ServerResponse): (event: string, json: string) => void {
  response.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    connection: 'keep-alive',
  });
  response.write('retry: 2000\n\n');
  return (event, json) => {
    response.write(`event: ${event}\ndata: ${json}\n\n`);
  };
}
