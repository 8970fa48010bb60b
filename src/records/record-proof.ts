/**
 * The proof a record of warren's own carries (a contract: docs/reference/trust.md). One header,
 * `warren-proof`, holds `1.<key id>.<writer id>.<seq>.<mac>`:
 * - `key id`: 8 hex characters derived from the key that signed (records/options.ts);
 * - `writer id`: 16 hex characters, random per warren instance; `seq` counts its records from 1;
 * - `mac`: HMAC-SHA256, base64url, over the canonical encoding
 *   `warren-record/1 NUL namespace NUL role NUL writer NUL seq NUL extra NUL` followed by the record's
 *   body bytes, where `role` names the stream or channel (`job-control`, `schedules`, …) and `extra` is
 *   what a role signs beside the body (a dead letter's warren headers), empty for most.
 * A record copied into another stream or namespace fails the MAC; a record appended again in the same
 * stream carries a (writer, seq) its reader has seen (see ReplayGuard).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RecordKey, ResolvedRecordSigning } from './options';

/** What a proof is about: the stream (or channel) a record belongs to. A closed set. */
export type RecordRole =
  | 'job-control'
  | 'schedules'
  | 'dead-letter-log'
  | 'history'
  /** Queue aggregates for the graphs; the level (`bucket`, `hour`, `day`) is the signed extra. */
  | 'aggregates'
  /** The graphs' time-axis marks: deploys, pauses, resumes. */
  | 'marks'
  /** Per-key limit overrides (docs/guide/per-key-limits.md). */
  | 'limits'
  | 'control-request'
  | 'control-reply'
  /** A history lookup asked of a lookup server, and its answer (docs/operating/cli.md#a-lookup-server). */
  | 'lookup-request'
  | 'lookup-reply'
  | 'job-result'
  | 'slip'
  | 'checkpoint'
  /** A live job event (docs/guide/events.md). */
  | 'job-events'
  /** A live-event subscriber's interest, or a publisher's hello. */
  | 'event-interest'
  /** An ordered partition member's heartbeat or leave (docs/guide/ordered-partitions.md). */
  | 'partition-members';

/** Why a record's proof was not accepted. */
export type ProofFailure = 'unsigned' | 'malformed-proof' | 'unknown-key' | 'bad-signature' | 'replayed';

export const PROOF_VERSION = '1';
/** Longer header values are not parsed. */
const MAX_PROOF_CHARS = 120;
const WRITER = /^[0-9a-f]{16}$/;
const KEY_ID = /^[0-9a-f]{8}$/;
const MAC_CHARS = 43;

/** A proof's parts once it parsed and its MAC matched: the reader's replay guard needs them. */
export interface ProofOrigin {
  readonly writer: string;
  readonly seq: number;
}

/** A new writer id (one per warren instance). */
export function newWriterId(): string {
  return randomBytes(8).toString('hex');
}

function mac(
  key: RecordKey,
  namespace: string,
  role: RecordRole,
  writer: string,
  seq: number,
  extra: string,
  body: Buffer,
): Buffer {
  return createHmac('sha256', key.secret)
    .update(`warren-record/1\0${namespace}\0${role}\0${writer}\0${seq}\0${extra}\0`)
    .update(body)
    .digest();
}

/** The header value proving `body` (and `extra`) was written by this writer as record `seq` of `role`. */
export function signRecord(
  signing: ResolvedRecordSigning,
  namespace: string,
  role: RecordRole,
  writer: string,
  seq: number,
  body: Buffer,
  extra = '',
): string {
  const key = signing.signWith;
  const digest = mac(key, namespace, role, writer, seq, extra, body).toString('base64url');
  return `${PROOF_VERSION}.${key.id}.${writer}.${seq}.${digest}`;
}

/**
 * Checks a proof with any of the keys (constant-time compare). Returns its origin, or why it fails.
 * Replay is the reader's to judge (a ReplayGuard): the proof alone cannot tell a copy from the original.
 */
export function verifyRecord(
  signing: ResolvedRecordSigning,
  namespace: string,
  role: RecordRole,
  proof: unknown,
  body: Buffer,
  extra = '',
): ProofOrigin | ProofFailure {
  if (proof === undefined || proof === null) return 'unsigned';
  const text = Buffer.isBuffer(proof) ? proof.toString('latin1') : proof;
  if (typeof text !== 'string' || text.length > MAX_PROOF_CHARS) return 'malformed-proof';
  const parts = text.split('.');
  if (parts.length !== 5 || parts[0] !== PROOF_VERSION) return 'malformed-proof';
  const [, keyId, writer, seqText, digest] = parts as [string, string, string, string, string];
  if (!KEY_ID.test(keyId) || !WRITER.test(writer) || digest.length !== MAC_CHARS) return 'malformed-proof';
  const seq = Number(seqText);
  if (!/^[1-9][0-9]{0,15}$/.test(seqText) || !Number.isSafeInteger(seq)) return 'malformed-proof';
  const key = signing.keys.get(keyId);
  if (key === undefined) return 'unknown-key';
  const given = Buffer.from(digest, 'base64url');
  const expected = mac(key, namespace, role, writer, seq, extra, body);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'bad-signature';
  return { writer, seq };
}
