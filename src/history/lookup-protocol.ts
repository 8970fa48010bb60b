/**
 * The lookup servers' protocol (a contract: docs/operating/cli.md#a-lookup-server). A process asks on the
 * lookup queue, with RabbitMQ direct reply-to and a correlation id; the one active server answers once.
 *
 * - Request: JSON `{ "v": 1, "j": <job id>, "t": <ms since epoch> }`, at most {@link MAX_REQUEST_BYTES}.
 * - Reply: a u32 (big-endian) length, then that many bytes of JSON `{ "v": 1, "s": <status>, "r"?: [{ "o":
 *   <history offset>, "n": <bytes>, "h": <the record's headers> }] }`, then each record's bytes in turn.
 *   Status `ok` carries every history record that may hold the job's events, as the history holds them: the
 *   asker proves and parses each one as if it had read it from the stream. `warming` (the server is still
 *   reading the history once), `busy` (it did not read its own marker in time) and `refused` (it cannot
 *   trust the request) send the asker to read the streams itself.
 *
 * Trust: both directions are taken only when the broker vouches for the sender (`user_id` is the reader's
 * own user: RabbitMQ refuses a publish naming another) and, with a signing key, when signed (the correlation
 * id signed with the body; a signed request older than a minute is refused, so a copied one cannot be sent
 * again with another reply address).
 */
import { HEADERS } from '../message';
import { parseJsonObject } from '../core';
import type { RecordRole, RecordTrust } from '../records';
import type { StreamRecord } from '../streams';

export const LOOKUP_PROTOCOL_VERSION = 1;
/** A request longer than this is refused unread, bytes. */
export const MAX_REQUEST_BYTES = 2048;
/** A reply that would be longer than this is not sent (`too-large`: the asker reads the streams), bytes. */
export const MAX_REPLY_BYTES = 32 * 1024 ** 2;
/** A job id longer than this is not asked about (the longest a job id may be). */
const MAX_JOB_ID_CHARS = 512;
/** A signed request older (or further in the future) than this is refused, ms. */
const MAX_REQUEST_AGE_MS = 60_000;
/** The longest correlation id either side takes. */
export const MAX_CORRELATION_CHARS = 200;

export type LookupStatus = 'ok' | 'warming' | 'busy' | 'refused' | 'too-large';

export interface LookupRequest {
  readonly jobId: string;
  /** When it was asked, ms since epoch. */
  readonly at: number;
}

export function encodeLookupRequest(jobId: string): Buffer {
  return Buffer.from(JSON.stringify({ v: LOOKUP_PROTOCOL_VERSION, j: jobId, t: Date.now() }));
}

/** The request in a message's bytes, or why it is refused. */
export function parseLookupRequest(content: Buffer, isSigned: boolean): LookupRequest | { refused: string } {
  const o = parseJsonObject(content, MAX_REQUEST_BYTES);
  if (o === undefined || o.v !== LOOKUP_PROTOCOL_VERSION) return { refused: 'not a lookup request' };
  const { j, t } = o;
  if (typeof j !== 'string' || j.length === 0 || j.length > MAX_JOB_ID_CHARS)
    return { refused: 'no job id of 1 to 512 characters' };
  if (typeof t !== 'number' || !Number.isFinite(t)) return { refused: 'no time' };
  if (isSigned && Math.abs(Date.now() - t) > MAX_REQUEST_AGE_MS)
    return { refused: 'a signed request older than a minute (or from the future)' };
  return { jobId: j, at: t };
}

/** A reply's bytes: a status, and with `ok` the records. Undefined when the records would not fit. */
export function encodeLookupReply(status: LookupStatus, records: readonly StreamRecord[] = []): Buffer {
  const meta = records.map((r) => ({ o: r.offset, n: r.content.length, h: r.properties.headers ?? {} }));
  const json = Buffer.from(
    JSON.stringify({ v: LOOKUP_PROTOCOL_VERSION, s: status, ...(status === 'ok' ? { r: meta } : {}) }),
  );
  const length = Buffer.allocUnsafe(4);
  length.writeUInt32BE(json.length);
  return Buffer.concat([length, json, ...records.map((r) => r.content)]);
}

/** The status and records of a reply; undefined when it is not one (a malformed or cut reply). */
export function parseLookupReply(
  content: Buffer,
): { status: LookupStatus; records: StreamRecord[] } | undefined {
  if (content.length < 4 || content.length > MAX_REPLY_BYTES) return undefined;
  const jsonEnd = 4 + content.readUInt32BE(0);
  if (jsonEnd > content.length) return undefined;
  const o = parseJsonObject(content.subarray(4, jsonEnd));
  if (o === undefined || o.v !== LOOKUP_PROTOCOL_VERSION || !isStatus(o.s)) return undefined;
  if (o.s !== 'ok') return { status: o.s, records: [] };
  if (!Array.isArray(o.r)) return undefined;
  const records: StreamRecord[] = [];
  let at = jsonEnd;
  for (const m of o.r as unknown[]) {
    const entry = m as { o?: unknown; n?: unknown; h?: unknown } | null;
    const offset = entry?.o;
    const n = entry?.n;
    const headers = entry?.h;
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(n) || (n as number) < 0) return undefined;
    if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) return undefined;
    if (at + (n as number) > content.length) return undefined;
    const bytes = content.subarray(at, at + (n as number));
    at += n as number;
    records.push({
      offset: offset as number,
      content: bytes,
      properties: { headers: headers as Record<string, unknown> } as StreamRecord['properties'],
    });
  }
  return at === content.length ? { status: 'ok', records } : undefined;
}

function isStatus(s: unknown): s is LookupStatus {
  return s === 'ok' || s === 'warming' || s === 'busy' || s === 'refused' || s === 'too-large';
}

/**
 * Whether a message of warren's own may be taken: its `user_id` is the reader's user (the broker vouches
 * for it) and, with a signing key, its proof holds. Neither (no known user, no key): never. The history's
 * index records and the lookup protocol both follow this rule.
 */
export function isVouched(
  trust: RecordTrust,
  role: RecordRole,
  username: string | undefined,
  message: { content: Buffer; properties: { userId?: unknown; headers?: Record<string, unknown> } },
  extra: string,
  where: Record<string, unknown>,
): boolean {
  if (username === undefined && !trust.isSigning) return false;
  if (username !== undefined && message.properties.userId !== username) return false;
  if (trust.isSigning && message.properties.headers?.[HEADERS.proof] === undefined) return false;
  return trust.check(role, message.content, message.properties.headers, extra, undefined, where);
}
